"""Analyzer-gated self-distillation jointly with GRPO (ComputerSD-style).

Each step plays GRPO's groups (training/recipes/grpo.py: the same rollouts, group advantages and clipped
surrogate). After the rollouts, the environment's rule-based analyzer (environments/analyzers.py) reads every
executed agent step and writes guidance ("You looked up the box, but the question is about the lamp") and a
value score in [0, 1]. For each agent step the teacher is the same network (live weights without gradient, or
a frozen copy of the starting model: `teacher_weights`) whose system prompt gains that step's guidance, followed
by exactly the student's tokens up to the end of the step; the student minimises the reverse KL to it on that
step's tokens only. The guidance is privileged: it is in the teacher's context only, never in a prompt the
student samples or trains on.

The step's value gates its distillation (`gate`):
    threshold: weight 1 where value < gate_threshold, else 0 (distil only the steps the rules found wanting)
    linear:    weight 1 - value (the worse the step, the stronger the pull toward the guided teacher)
    none:      weight 1 on every step (ungated self-distillation with per-step guidance)
The weight scales each token's KL; the mean is over all agent tokens (losses.py's convention), so a batch whose
steps are mostly fine gets a small distillation term. Loss = GRPO + sd_coef * gated SD
(with GRPO's own options: the TJPO diversity bonus, the entropy bonus). With sd_coef = 0 the
recipe is GRPO alone at the same compute (the teacher still runs and its KL is logged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from environments.analyzers import StepAnalysis, analyze_record
from environments.records import Record
from training.config_fields import DistillLossFields, TeacherWeightsFields
from training.data import PromptStyle, TokenizedEpisode, encode_text, render_chat
from training.engine import Hooks, RunResult, Trainer
from training.losses import HiddenLogits, Logits, kl_full, reverse_kl_sampled
from training.modeling import forward_hidden_logits, gather_logprobs, load_model, token_logprobs
from training.onpolicy import evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.recipes.grpo import GRPOConfig, clipped_surrogate, grpo_advantages, reference_policy, training_reward, with_entropy
from training.sampling import episode_stats

GATES = ("threshold", "linear", "none")


@dataclass
class GatedSDConfig(DistillLossFields, TeacherWeightsFields, GRPOConfig):
    sd_coef: float = 0.5
    """Weight of the gated self-distillation term (0: GRPO alone, same compute)."""
    gate: str = "threshold"
    """threshold (distil steps with value < gate_threshold) | linear (weight 1 - value) | none (every step)."""
    gate_threshold: float = 0.5
    """With gate=threshold: steps the analyzer valued below this are distilled."""
    loss: str = "full"

    def problems(self) -> list[str]:
        out = super().problems()
        if self.sd_coef < 0:
            out.append(f"sd_coef={self.sd_coef!r}: must not be negative")
        if self.gate not in GATES:
            out.append(f"gate={self.gate!r}: must be one of {', '.join(GATES)}")
        if not 0.0 < self.gate_threshold <= 1.0:
            out.append(f"gate_threshold={self.gate_threshold!r}: must be in (0, 1]")
        return out


def gate_weight(value: float, gate: str, threshold: float) -> float:
    """How much a step with analyzer value `value` is distilled (see the module docstring)."""
    if gate == "threshold":
        return 1.0 if value < threshold else 0.0
    if gate == "linear":
        return 1.0 - value
    if gate == "none":
        return 1.0
    raise ValueError(f"gate must be one of {GATES}, got {gate!r}")


def guided_prompt_ids(record: Record, tokenizer: Any, guidance: str | None, turn: int = 0) -> list[int]:
    """The episode's first prompt, rendered in the record's prompt style, with `guidance` (about agent turn
    `turn`) appended to the system prompt; guidance=None gives back exactly the prompt the student saw."""
    header = record["header"]
    harness = header.get("harness") or {}
    style = PromptStyle(compact_tools=bool(harness.get("compact_tools")), max_result_chars=int(harness.get("max_result_chars") or 0))
    system = str(harness.get("system_prompt") or "")
    if guidance is not None:
        system = f"{system}\n\nA reviewer's note on your turn {turn}, which you are about to take: {guidance}"
    tools = header.get("tools") or None
    messages = [
        {"role": "system", "content": style.system(system, tools)},
        {"role": "user", "content": str(record["steps"][0].get("message") or "")},
    ]
    return encode_text(tokenizer, render_chat(tokenizer, messages, style.template_tools(tools), generation_prompt=True))


@dataclass
class TeacherRow:
    """One agent step's teacher sequence: guided prompt + the student's tokens up to the end of the step."""

    input_ids: list[int]
    offset: int  # teacher position = student position + offset
    row: int  # the student row in the micro-batch
    start: int  # the step's tokens are student positions [start, end)
    end: int
    weight: float  # the gate weight of the step


def teacher_rows(
    row: int, record: Record, student: TokenizedEpisode, analyses: dict[int, StepAnalysis], tokenizer: Any, config: GatedSDConfig
) -> list[TeacherRow]:
    first_prompt = next(s["prompt_token_ids"] for s in record["steps"] if s.get("prompt_token_ids"))
    assert student.input_ids[: len(first_prompt)] == first_prompt, "gated self-distillation needs untrimmed episodes (one sequence each)"
    out = []
    for turn, (step_index, start, end) in enumerate(student.agent_spans, start=1):
        analysis = analyses[step_index]
        prefix = guided_prompt_ids(record, tokenizer, analysis.guidance, turn)
        ids = prefix + student.input_ids[len(first_prompt) : end]
        weight = gate_weight(analysis.value, config.gate, config.gate_threshold)
        out.append(TeacherRow(ids, len(prefix) - len(first_prompt), row, start, end, weight))
    return out


@torch.no_grad()
def teacher_targets(teacher: Any, rows: list[TeacherRow], batch: dict[str, torch.Tensor], pad_id: int, full: bool) -> dict[str, Any]:
    """For the student batch (B, T): `gate` (B, T-1), the step weight at each prediction position, and the
    teacher's `teacher_logits` (B, T-1, V) (full; HiddenLogits where the engine runs the teacher, so only hidden
    states are kept) or `teacher_logp` of the student's tokens (B, T-1) (sampled), each position taken from the
    guided teacher row of the step it belongs to. Teacher rows run in slices of B."""
    assert rows, "every student sequence has at least one agent step (tokenized() drops the others)"
    input_ids = batch["input_ids"]
    size, width = input_ids.shape[0], input_ids.shape[1] - 1
    gate = torch.zeros(size, width, device=input_ids.device)
    out: dict[str, Any] = {"gate": gate}
    head = None  # the teacher's lm_head when its logits come as HiddenLogits
    for first in range(0, len(rows), size):
        part = rows[first : first + size]
        longest = max(len(r.input_ids) for r in part)
        ids = torch.tensor([r.input_ids + [pad_id] * (longest - len(r.input_ids)) for r in part], device=input_ids.device)
        attention = torch.tensor([[1] * len(r.input_ids) + [0] * (longest - len(r.input_ids)) for r in part], device=input_ids.device)
        logits = forward_hidden_logits(teacher, ids, attention, frozen=True)  # (rows, longest, V), right padded
        values = logits.hidden if isinstance(logits, HiddenLogits) else logits  # (rows, longest, H or V)
        head = logits.head if isinstance(logits, HiddenLogits) else None
        for k, r in enumerate(part):
            # the student predicts its tokens [start, end) at positions [start - 1, end - 1); the teacher at + offset
            span = slice(r.start - 1 + r.offset, r.end - 1 + r.offset)
            gate[r.row, r.start - 1 : r.end - 1] = r.weight
            if full:
                if "teacher_logits" not in out:
                    out["teacher_logits"] = torch.zeros(size, width, values.shape[-1], dtype=values.dtype, device=values.device)
                out["teacher_logits"][r.row, r.start - 1 : r.end - 1] = values[k, span]
            else:
                if "teacher_logp" not in out:
                    out["teacher_logp"] = torch.zeros(size, width, device=values.device)
                targets = input_ids[r.row, r.start : r.end].unsqueeze(0)
                out["teacher_logp"][r.row, r.start - 1 : r.end - 1] = gather_logprobs(logits[k : k + 1, span], targets)[0]
    if full and head is not None:
        out["teacher_logits"] = HiddenLogits(out["teacher_logits"], head, frozen=True)
    return out


def joint_loss(logits: Logits, batch: dict[str, Any], config: GatedSDConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO's clipped surrogate + sd_coef * the gated reverse KL to the guided teacher, from student logits (B, T, V)."""
    targets, mask = batch["input_ids"][:, 1:], batch["mask"][:, 1:]
    logp = gather_logprobs(logits[:, :-1], targets)  # (B, T-1)
    rl, rl_metrics = clipped_surrogate(logp, batch, mask, config)
    if config.loss == "full":
        sd, sd_metrics = kl_full(
            logits[:, :-1], batch["teacher_logits"], mask, direction="reverse", top_k=config.top_k or None, weights=batch["gate"]
        )
    else:
        sd, sd_metrics = reverse_kl_sampled(logp, batch["teacher_logp"], mask, weights=batch["gate"])
    active = mask.sum().clamp(min=1.0)
    metrics = {f"grpo_{k}": v for k, v in rl_metrics.items() if k != "tokens"}
    metrics.update({f"sd_{k}": v for k, v in sd_metrics.items() if k != "tokens"})
    metrics["sd_gate_mean"] = float((batch["gate"] * mask).sum() / active)  # the average token weight of the SD term
    loss = rl + config.sd_coef * sd
    metrics["loss"] = float(loss.detach())
    return with_entropy(loss, metrics, logits[:, :-1], mask, config)


def run(config: GatedSDConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="gated_sd", hooks=hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id
    frozen = load_model(config.model, device=trainer.device, trainable=False)[0] if config.teacher_weights == "frozen" else None
    reference = reference_policy(trainer, config) if config.kl_coef > 0 else None
    if trainer.step == 0:
        trainer.log(evaluate(model, tokenizer, config))

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        rewards = torch.tensor([training_reward(r, config.reward_component) for r in records])
        advantages, diversity_metrics = grpo_advantages(records, rewards, config)
        analyses = [dict(analyze_record(r)) for r in records]
        items = [(i, e) for i, e in tokenized(records, tokenizer)]
        prepared = []
        with torch.no_grad():  # the policy before this update, the reference and the guided teacher, scored once
            for chunk in micro_batches(items, config.grad_accum):
                batch = to_device([e for _, e in chunk], pad_id, trainer.device)
                batch["advantages"] = torch.tensor([float(advantages[i]) for i, _ in chunk], device=trainer.device)
                batch["old_logp"] = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
                if reference is not None:
                    batch["ref_logp"] = token_logprobs(reference, batch["input_ids"], batch["attention_mask"])
                rows = [t for row, (i, e) in enumerate(chunk) for t in teacher_rows(row, records[i], e, analyses[i], tokenizer, config)]
                batch.update(teacher_targets(model if frozen is None else frozen, rows, batch, pad_id, full=config.loss == "full"))
                prepared.append(batch)

        metrics = trainer.optimize(
            prepared, lambda b: joint_loss(forward_hidden_logits(model, b["input_ids"], b["attention_mask"]), b, config)
        )
        metrics.update(episode_stats(records))
        metrics.update(diversity_metrics)
        metrics["reward_std"] = float(rewards.std())
        values = [a.value for per_record in analyses for a in per_record.values()]
        metrics["step_value_mean"] = sum(values) / max(len(values), 1)
        metrics["steps_gated_in"] = sum(gate_weight(v, config.gate, config.gate_threshold) > 0 for v in values) / max(len(values), 1)
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
