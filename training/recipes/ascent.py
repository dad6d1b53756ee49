"""ASCENT: online test-time training over a stream of related tasks, one attempt each, in a single pass.

At stream position i the current model (the base plus persistent LoRA weights) plays stream task i once. If the
attempt verified (the environment's score passed), its invalid-action turns are dropped, the cleaned record is
re-rendered through the chat template, and the FROZEN initial model (the same network with its adapter
disabled) reads it with privileged context: the verified trajectory itself, shown as text in its system
prompt. Its next-token distributions along the trajectory's agent tokens are the target; the LoRA weights take
`steps_per_task` optimizer steps of forward KL(teacher || student) on those tokens. A failed attempt changes
nothing. `update = "sft"` is the naive online baseline (cross-entropy on the same cleaned verified attempts:
identical data, only the loss differs); `update = "none"` plays the stream without adapting (its curve is the
no-adaptation baseline).

`trainer.step` counts stream positions, not optimizer updates: metrics row k describes stream task k-1, a
checkpoint `step-k` resumes at position k, and `max_steps` is the stream's length. Stream task i is seed
`train_seed_start + order[i]`, with `order` a permutation of range(train_seeds) drawn from `seed`, so each
training seed sees its own stream and a resume replays it exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from environments.records import Record, Step, header_score
from training.data import AGENT_SOURCES, TokenizedEpisode, tokenize_record
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.losses import kl_full, sft_loss
from training.modeling import forward_logits
from training.onpolicy import OnPolicyConfig, evaluate, should_evaluate, to_device
from training.policies.roles import is_actor_turn
from training.recipes.self_distill import aligned_teacher_logits
from training.sampling import rollout_episodes

UPDATES = ("distill", "sft", "none")
PRIVILEGED_TEMPLATE = "A verified solution of this very task, found earlier (it passed):\n{trajectory}\nSolve the task as it did."


@dataclass
class AscentConfig(OnPolicyConfig):
    GREEDY_OK: ClassVar[bool] = True  # a single attempt per stream task may be greedy

    max_steps: int = 64
    """The stream's length: stream positions played, one task each (single pass; at most train_seeds)."""
    update: str = "distill"
    """distill (ASCENT: forward KL to the frozen initial model given the verified trajectory) | sft (naive
    online SFT: cross-entropy on the same cleaned verified attempts) | none (play the stream, never adapt)."""
    steps_per_task: int = 4
    """Optimizer steps on each verified task's trajectory (the stream position counts once)."""
    privileged_template: str = PRIVILEGED_TEMPLATE
    """The teacher's privileged context, appended to its system prompt; `{trajectory}` is the verified trajectory as text."""
    temperature: float = 0.0
    """Temperature of the one attempt per stream task (0: greedy)."""
    lora_r: int = 16
    """LoRA rank; must be positive: the adaptation is the persistent LoRA weights, and the teacher is the base with them disabled."""
    tasks_per_step: int = 1
    """Must be 1: a stream position is one task."""
    group_size: int = 1
    """Must be 1: each stream task is attempted once."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.lora_r < 1:
            out.append(f"lora_r={self.lora_r!r}: ascent adapts LoRA weights and its teacher is the base without them; give lora_r > 0")
        if self.update not in UPDATES:
            out.append(f"update={self.update!r}: must be one of {', '.join(UPDATES)}")
        if self.steps_per_task < 1:
            out.append(f"steps_per_task={self.steps_per_task!r}: must be at least 1")
        for name in ("tasks_per_step", "group_size"):
            if getattr(self, name) != 1:
                out.append(f"{name}={getattr(self, name)!r}: must be 1 (ascent attempts each stream task once)")
        if self.max_steps > self.train_seeds:
            out.append(f"max_steps={self.max_steps!r}: the stream is a single pass over train_seeds={self.train_seeds!r} tasks")
        if self.lr_schedule != "constant":
            out.append(f"lr_schedule={self.lr_schedule!r}: must be constant (updates happen only after verified tasks, not per step)")
        if not template_fits(self.privileged_template):
            out.append(f"privileged_template={self.privileged_template!r}: must contain {{trajectory}} and no other {{...}} field")
        return out


def template_fits(template: str) -> bool:
    try:
        template.format(trajectory="")
    except (KeyError, IndexError, ValueError):
        return False
    return "{trajectory}" in template


def stream_seed(config: AscentConfig, position: int) -> int:
    return config.train_seed_start + batch_indices(config.train_seeds, 1, config.seed, position)[0]


def play(trainer: Trainer, config: AscentConfig, position: int) -> dict[str, Any]:
    """The current model's one attempt at stream task `position` (sampling seeded by position: resumes replay it)."""
    torch.manual_seed(config.seed * 1_000_003 + position)
    trainer.model.eval()
    (record,) = rollout_episodes(
        trainer.model,
        trainer.tokenizer,
        [(config.task, stream_seed(config, position))],
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
    )
    trainer.model.train()
    return record


def is_invalid_turn(step: Step) -> bool:
    """An actor turn whose action failed: a call the environment refused, or output that did not parse (the
    sampler records that as an error result too)."""
    return is_actor_turn(step, AGENT_SOURCES) and any(r.get("is_error") for r in step.get("results") or [])


def cleaned_record(record: Record) -> dict[str, Any]:
    """The record without its invalid turns, steps re-indexed, and without sampled ids (so tokenize_record
    re-renders it: the kept turns' prompts no longer contain the dropped ones)."""
    kept = [s for s in record["steps"] if not is_invalid_turn(s)]
    steps = [{**s, "index": i, "token_ids": None, "prompt_token_ids": None, "logprobs": None} for i, s in enumerate(kept)]
    return {**record, "steps": steps}


def trajectory_text(record: Record) -> str:
    """The trajectory as plain text: each actor turn's calls with what they returned, or what it said."""
    lines = []
    turns = [s for s in record["steps"] if is_actor_turn(s, AGENT_SOURCES)]
    for number, step in enumerate(turns, start=1):
        results = {r.get("call_id"): r.get("content") for r in step.get("results") or []}
        for call in step.get("tool_calls") or []:
            arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
            lines.append(f"Turn {number}: {call['name']}({arguments}) -> {json.dumps(results.get(call.get('id')), ensure_ascii=False)}")
        if step.get("message") and not step.get("tool_calls"):
            lines.append(f"Turn {number}: said {json.dumps(step['message'], ensure_ascii=False)}")
    return "\n".join(lines)


def _one(episodes: list[TokenizedEpisode]) -> TokenizedEpisode:
    assert len(episodes) == 1, f"a re-rendered record is one sequence, got {len(episodes)}"
    return episodes[0]


def _system_length(episode: TokenizedEpisode) -> int:
    """Tokens of the leading system message (turn -1), the only part the teacher's sequence renders differently."""
    return next((i for i, turn in enumerate(episode.turn_of_token) if turn != -1), len(episode))


def teacher_view(cleaned: dict[str, Any], tokenizer: Any, config: AscentConfig) -> tuple[TokenizedEpisode, TokenizedEpisode, int]:
    """(student episode, teacher episode, offset): the same cleaned record rendered twice, the teacher's with the
    privileged context in its system prompt; teacher position t + offset holds student token t after the system prompt."""
    system = (cleaned["header"].get("harness") or {}).get("system_prompt") or ""
    privileged = config.privileged_template.format(trajectory=trajectory_text(cleaned))
    student = _one(tokenize_record(cleaned, tokenizer, style=config.prompt_style))
    teacher = _one(tokenize_record(cleaned, tokenizer, system_prompt=f"{system}\n\n{privileged}", style=config.prompt_style))
    s0, t0 = _system_length(student), _system_length(teacher)
    assert teacher.input_ids[t0:] == student.input_ids[s0:] and teacher.mask[t0:] == student.mask[s0:], (
        "the teacher's sequence must differ from the student's only in its system prompt"
    )
    return student, teacher, t0 - s0


def ascent_loss(student_logits: torch.Tensor, batch: dict[str, Any], *, update: str) -> tuple[torch.Tensor, dict[str, float]]:
    """Forward KL(teacher || student) (distill) or cross-entropy (sft) on the agent tokens; logits (B, T, V)."""
    targets, mask = batch["input_ids"][:, 1:], batch["mask"][:, 1:]
    if update == "sft":
        return sft_loss(student_logits[:, :-1], targets, mask)
    return kl_full(student_logits[:, :-1], batch["teacher_logits"][:, :-1], mask, direction="forward")


def adapt(trainer: Trainer, config: AscentConfig, record: Record) -> dict[str, float]:
    """`steps_per_task` optimizer steps on one verified record; returns the first step's metrics (the loss before
    adapting to it) with `loss_last`, `tokens` summed over the steps and `dropped_turns`."""
    model, tokenizer, device = trainer.model, trainer.tokenizer, trainer.device
    cleaned = cleaned_record(record)
    student, teacher, offset = teacher_view(cleaned, tokenizer, config)
    batch = to_device([student], tokenizer.pad_token_id, device)
    if config.update == "distill":
        teacher_batch = to_device([teacher], tokenizer.pad_token_id, device)
        model.eval()
        with torch.no_grad(), model.disable_adapter():  # the frozen initial model: the base without the LoRA weights
            logits = forward_logits(model, teacher_batch["input_ids"], teacher_batch["attention_mask"])
        positions = torch.arange(batch["input_ids"].shape[1], device=device).unsqueeze(0) + offset  # (1, T): one offset
        batch["teacher_logits"] = aligned_teacher_logits(logits, positions)

    def loss_fn(micro: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        return ascent_loss(forward_logits(model, micro["input_ids"], micro["attention_mask"]), micro, update=config.update)

    position = trainer.step
    steps = [trainer.optimize([batch], loss_fn) for _ in range(config.steps_per_task)]
    trainer.step = position  # optimize() counts updates; this recipe's step is the stream position
    return {
        **steps[0],
        "loss_last": steps[-1]["loss"],
        "tokens": sum(s["tokens"] for s in steps),
        "dropped_turns": float(len(record["steps"]) - len(cleaned["steps"])),
    }


def run(config: AscentConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="ascent", hooks=hooks)
    assert hasattr(trainer.model, "disable_adapter"), "ascent needs a peft LoRA model (lora_r > 0)"
    totals = trainer.state.setdefault("stream", {"passed": 0, "turns": 0, "updates": 0})
    while trainer.step < config.max_steps and not trainer.stopping():
        position = trainer.step
        record = play(trainer, config, position)
        header = record["header"]
        passed, turns = bool(header_score(header)["passed"]), int(header["metrics"]["turns"])
        metrics: dict[str, float] = {}
        if passed and config.update != "none":
            metrics.update(adapt(trainer, config, record))
            totals["updates"] += config.steps_per_task
        totals["passed"] += int(passed)
        totals["turns"] += turns
        trainer.step = position + 1
        metrics.update(
            task_seed=float(header["seed"]),
            stream_passed=float(passed),
            stream_reward=float(header_score(header)["composite"]),
            stream_turns=float(turns),
            stream_pass_rate=totals["passed"] / trainer.step,
            stream_turns_mean=totals["turns"] / trainer.step,
            updates=float(totals["updates"]),
        )
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(trainer.model, trainer.tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
