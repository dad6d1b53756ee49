"""Self-distillation from a self-teacher (SDPO-style), optionally with feedback modeling (SELF).

The student plays episodes as usual. The teacher is the same network given privileged context: the episode's
outcome and every environment response (`teacher_context="outcome"`, hindsight), the responses alone
("feedback", the feedback-conditioned teacher of SELF) or a coach's notes at the turns they anticipate ("coach",
coached self-distillation); training/self_teacher.py builds its sequence and documents each. The teacher runs
over that context followed by exactly the student's tokens, and the student minimises the reverse KL to it on
its own agent tokens (positions are mapped per token, since the contexts differ in length).
`teacher_weights`: "live" (the current weights, no gradient) or "frozen" (a copy of the starting model).
With `feedback_modeling=True` the student is also trained to predict the environment's responses (the
`env_mask` tokens of its own episodes: tool results, the user's replies, the template glue between turns),
weighted by `feedback_coef`, jointly with the distillation: loss = KL + feedback_coef * NLL(env tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from environments.coaching import coach_episode, notes_by_actor_step
from environments.core import EnvError, Policy
from environments.policies import make_policy
from environments.records import Record
from environments.registry import env_meta, get_task, make
from environments.roles import USER
from training.config_fields import DistillLossFields, TeacherWeightsFields
from training.engine import Hooks, RunResult, Trainer
from training.losses import HiddenLogits, Logits, sft_loss_from_logprobs
from training.modeling import argmax_hits, forward_hidden_logits, gather_logprobs, load_model
from training.onpolicy import OnPolicyConfig, evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.recipes.opd import distill_loss
from training.sampling import episode_stats
from training.self_teacher import TEACHER_CONTEXTS, teacher_sequence


@dataclass
class SelfDistillConfig(DistillLossFields, TeacherWeightsFields, OnPolicyConfig):
    teacher_context: str = "outcome"
    """What the self-teacher is shown: outcome (score + every environment response: hindsight) | feedback (the
    environment's responses only, no score: SELF's feedback-conditioned teacher) | coach (the coach's notes, each
    just before the actor turn it anticipates; needs an environment with a user, e.g. servicedesk/...)."""
    coach: str = "rule-coach"
    """With teacher_context=coach: the coach policy (an environments.policies name) that writes the notes."""
    loss: str = "full"
    feedback_modeling: bool = False
    """Also train the policy to predict the environment's responses (SELF)."""
    feedback_coef: float = 0.1
    """Weight of the feedback-modeling cross-entropy."""
    group_size: int = 1
    """Rollouts per prompt."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.teacher_context not in TEACHER_CONTEXTS:
            out.append(f"teacher_context={self.teacher_context!r}: must be one of {', '.join(TEACHER_CONTEXTS)}")
        elif self.teacher_context == "coach" and not _has_user(self.task):
            out.append(f"teacher_context='coach': task {self.task!r} has no user to coach on (use a servicedesk/... task)")
        if self.feedback_coef < 0:
            out.append(f"feedback_coef={self.feedback_coef!r}: must not be negative")
        return out


def _has_user(task: str) -> bool:
    try:
        return any(slot.name == USER for slot in env_meta(get_task(task).env).roles)
    except EnvError:  # an unknown task is reported where the task is made, with the registry's own message
        return True


def feedback_loss(logits: Logits, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean next-token NLL on the env_mask tokens (the environment's responses): logits (B, T, V) of input_ids."""
    targets = batch["input_ids"][:, 1:]
    return sft_loss_from_logprobs(gather_logprobs(logits[:, :-1], targets), argmax_hits(logits[:, :-1], targets), batch["env_mask"][:, 1:])


def aligned_teacher_logits(teacher_logits: Logits, positions: torch.Tensor) -> Logits:
    """Row b of the result holds teacher_logits[b, positions[b, t]] at position t: (B, Tt, V), (B, T) -> (B, T, V)
    (of HiddenLogits, the hidden states are the ones gathered)."""
    if isinstance(teacher_logits, HiddenLogits):
        return HiddenLogits(_at_positions(teacher_logits.hidden, positions), teacher_logits.head, frozen=teacher_logits.frozen)
    return _at_positions(teacher_logits, positions)


def _at_positions(values: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """(B, Tt, D), (B, T) -> (B, T, D): values[b, positions[b, t]]."""
    index = positions.clamp(0, values.shape[1] - 1).unsqueeze(-1).expand(-1, -1, values.shape[-1])
    return values.gather(1, index)


def teacher_batch(
    pairs: list[tuple[dict[str, Any], Any]], tokenizer: Any, context: str, width: int, device: torch.device
) -> dict[str, torch.Tensor]:
    """input_ids/attention_mask (B, Tt) of the teachers' sequences and positions (B, width) into them (0 on padding)."""
    sequences = [teacher_sequence(record, student, tokenizer, context=context) for record, student in pairs]
    teacher_width = max(len(ids) for ids, _ in sequences)
    pad = tokenizer.pad_token_id
    return {
        "input_ids": torch.tensor([ids + [pad] * (teacher_width - len(ids)) for ids, _ in sequences], device=device),
        "attention_mask": torch.tensor([[1] * len(ids) + [0] * (teacher_width - len(ids)) for ids, _ in sequences], device=device),
        "positions": torch.tensor([pos + [0] * (width - len(pos)) for _, pos in sequences], device=device),
        "extra_tokens": torch.tensor([len(ids) - len(pos) for ids, pos in sequences], dtype=torch.float32),
    }


def coached(records: list[Record], coach: Policy | None) -> list[dict[str, Any]]:
    """The records with the coach's notes on each user turn (unchanged without a coach)."""
    return records if coach is None else [coach_episode(r, coach) for r in records]


def run(config: SelfDistillConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="self_distill", hooks=hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id
    frozen = load_model(config.model, device=trainer.device, trainable=False)[0] if config.teacher_weights == "frozen" else None
    coach = make_policy(config.coach, make(config.task, config.train_seed_start), 0) if config.teacher_context == "coach" else None
    if trainer.step == 0:
        trainer.log(evaluate(model, tokenizer, config))

    while trainer.step < config.max_steps and not trainer.stopping():
        records = coached(rollouts(trainer, config), coach)
        pairs = [(records[i], e) for i, e in tokenized(records, tokenizer)]
        prepared, extra_tokens = [], []
        with torch.no_grad():
            teacher = frozen if frozen is not None else model
            for chunk in micro_batches(pairs, config.grad_accum):
                batch = to_device([e for _, e in chunk], pad_id, trainer.device)
                side = teacher_batch(chunk, tokenizer, config.teacher_context, batch["input_ids"].shape[1], trainer.device)
                logits = forward_hidden_logits(teacher, side["input_ids"], side["attention_mask"], frozen=True)
                batch["teacher_logits"] = aligned_teacher_logits(logits, side["positions"])
                extra_tokens.extend(side["extra_tokens"].tolist())
                prepared.append(batch)

        def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
            logits = forward_hidden_logits(model, batch["input_ids"], batch["attention_mask"])
            loss, metrics = distill_loss(logits, batch["teacher_logits"], batch, loss=config.loss, top_k=config.top_k)
            if config.feedback_modeling:
                feedback, fb = feedback_loss(logits, batch)
                loss = loss + config.feedback_coef * feedback
                metrics.update(feedback_nll=fb["nll"], feedback_tokens=fb["tokens"], loss=float(loss.detach()))
            return loss, metrics

        metrics = trainer.optimize(prepared, loss_fn)
        metrics.update(episode_stats(records))
        metrics["teacher_extra_tokens"] = sum(extra_tokens) / max(len(extra_tokens), 1)  # context the teacher saw beyond the student
        if coach is not None:
            metrics["coach_notes_per_episode"] = sum(len(notes_by_actor_step(r)) for r in records) / max(len(records), 1)
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
