"""Self-distillation with hindsight (SDPO-style), optionally with feedback modeling (SELF).

The student plays episodes as usual. The teacher is the same network given hindsight: its system prompt
gains the episode's outcome and everything the environment answered along the way. The teacher runs over
the hindsight prompt followed by exactly the student's tokens, and the student minimises the reverse KL to it
on its own agent tokens (the two sequences differ only in the prompt, so positions are offset per row).
`teacher_weights`: "live" (the current weights, no gradient) or "frozen" (a copy of the starting model).
With `feedback_modeling=True` the student is also trained to predict the environment's responses (the
tool-result tokens of its own episodes), weighted by `feedback_coef`, jointly with the distillation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch

from training.data import TokenizedEpisode
from training.engine import Hooks, RunResult, Trainer
from training.losses import sft_loss
from training.modeling import forward_logits, load_model
from training.recipes.onpolicy import OnPolicyConfig, evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.recipes.opd import distill_loss
from training.sampling import episode_stats


@dataclass
class SelfDistillConfig(OnPolicyConfig):
    teacher_weights: str = "live"
    """live (the model being trained, without gradient) | frozen (a copy of the starting model)."""
    loss: str = "full"
    """full (full-vocabulary reverse KL per position) | sampled (on the student's sampled tokens)."""
    top_k: int = 0
    """With loss=full: top-k plus tail bucket (0: whole vocabulary)."""
    feedback_modeling: bool = False
    """Also train the policy to predict the environment's responses (SELF)."""
    feedback_coef: float = 0.1
    """Weight of the feedback-modeling cross-entropy."""
    group_size: int = 1
    """Rollouts per prompt."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.teacher_weights not in ("live", "frozen"):
            out.append(f"teacher_weights={self.teacher_weights!r}: must be live or frozen")
        if self.loss not in ("sampled", "full"):
            out.append(f"loss={self.loss!r}: must be sampled or full")
        if self.feedback_coef < 0:
            out.append(f"feedback_coef={self.feedback_coef!r}: must not be negative")
        return out


def hindsight_text(record: dict[str, Any]) -> str:
    """The privileged context: the outcome and every environment response of the episode."""
    score = record["header"].get("score") or {}
    lines = [f"Hindsight: this episode scored {score.get('composite', 0.0):.2f} ({'passed' if score.get('passed') else 'not passed'})."]
    for step in record["steps"]:
        for result in step.get("results") or []:
            lines.append(
                f"Turn {step['index']}: {'error ' if result.get('is_error') else ''}{json.dumps(result.get('content'), ensure_ascii=False)}"
            )
    return "\n".join(lines)


def teacher_prompt_ids(record: dict[str, Any], tokenizer: Any) -> list[int]:
    """The first prompt with the hindsight appended to the system prompt."""
    header = record["header"]
    system = f"{(header.get('harness') or {}).get('system_prompt', '')}\n\n{hindsight_text(record)}"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": str(record["steps"][0].get("message") or "")}]
    text = tokenizer.apply_chat_template(messages, tools=header.get("tools") or None, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def teacher_episode(record: dict[str, Any], student: TokenizedEpisode, tokenizer: Any) -> tuple[TokenizedEpisode, int]:
    """The teacher's sequence (hindsight prompt + the student's tokens after its first prompt) and the offset."""
    first_prompt = record["steps"][1]["prompt_token_ids"]
    assert student.input_ids[: len(first_prompt)] == first_prompt, "self-distillation needs untrimmed episodes (one sequence each)"
    prefix = teacher_prompt_ids(record, tokenizer)
    rest = slice(len(first_prompt), None)
    episode = TokenizedEpisode(
        prefix + student.input_ids[rest],
        [0] * len(prefix) + student.mask[rest],
        [0] * len(prefix) + student.env_mask[rest],
        [0.0] * len(prefix) + student.weights[rest],
        [-1] * len(prefix) + student.turn_of_token[rest],
        [],
        [float("nan")] * len(prefix) + student.sampled_logprobs[rest],
    )
    return episode, len(prefix) - len(first_prompt)


def aligned_teacher_logits(teacher_logits: torch.Tensor, offsets: torch.Tensor, width: int) -> torch.Tensor:
    """Row b of the result holds teacher_logits[b, t + offsets[b]] at position t (B, width, V)."""
    positions = (torch.arange(width, device=teacher_logits.device).unsqueeze(0) + offsets.unsqueeze(1)).clamp(
        0, teacher_logits.shape[1] - 1
    )
    return teacher_logits.gather(1, positions.unsqueeze(-1).expand(-1, -1, teacher_logits.shape[-1]))


def run(config: SelfDistillConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="self_distill", hooks=hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id
    frozen = load_model(config.model, device=trainer.device, trainable=False)[0] if config.teacher_weights == "frozen" else None
    if trainer.step == 0:
        trainer.log(evaluate(model, tokenizer, config))

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        pairs = [(records[i], e) for i, e in tokenized(records, tokenizer)]
        prepared = []
        with torch.no_grad():
            teacher = frozen if frozen is not None else model
            for chunk in micro_batches(pairs, config.grad_accum):
                batch = to_device([e for _, e in chunk], pad_id, trainer.device)
                teacher_side = [teacher_episode(r, e, tokenizer) for r, e in chunk]
                teacher_batch = to_device([t for t, _ in teacher_side], pad_id, trainer.device)
                offsets = torch.tensor([o for _, o in teacher_side], device=trainer.device)
                logits = forward_logits(teacher, teacher_batch["input_ids"], teacher_batch["attention_mask"])
                batch["teacher_logits"] = aligned_teacher_logits(logits, offsets, batch["input_ids"].shape[1])
                prepared.append(batch)

        def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
            logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
            loss, metrics = distill_loss(logits, batch["teacher_logits"], batch, loss=config.loss, top_k=config.top_k)
            if config.feedback_modeling:
                feedback, fb = sft_loss(logits[:, :-1], batch["input_ids"][:, 1:], batch["env_mask"][:, 1:])
                loss = loss + config.feedback_coef * feedback
                metrics["feedback_nll"] = fb["nll"]
            return loss, metrics

        metrics = trainer.optimize(prepared, loss_fn)
        metrics.update(episode_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
