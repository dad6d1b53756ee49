"""HAT, harness annealing: SFT on teacher trajectories whose harness is taken away stage by stage, with the
harness's own decisions supervised, so the student comes to do without it what the harness did for it.

    python -m training hat --set model=PATH --set data=harness.jsonl --set max_steps=40 --set harness_weight=0.5

The data are records played under harness levels (training/harness_data.py collects them: the task's demonstrator
or a teacher model under each level; a record's level is its header.team.harness_level, "tools-only" without a
team). The run is a curriculum of stages, one per entry of `levels` (strongest first by default: full, guided,
light, tools-only): stage k trains only on the records of levels[k], for stage_steps[k] optimizer steps (an even
split of max_steps when stage_steps is empty, the later stages taking the remainder: the run ends on the level it
will be used at).

Per token, the loss is SFT's (training/losses.sft_loss): Σ m·w·nll / Σ m over the trained tokens. Trained are the
actor's own turns (w = 1, as in SFT) and, with harness_weight > 0, the text of each harness decision in the actor's
context (its "Harness: ..." message after the label, to its end-of-turn token; w = harness_weight): the student
learns to predict what the harness would decide at that point. A tools-only record has no decisions, so its stage
is plain SFT. With one level and harness_weight = 0 the recipe is SFT on that level's records (the experiment's
baselines use exactly that, so every arm shares batch logic and loss). Logged per step besides SFT's metrics:
stage, level (its index in HARNESS_LEVELS), actor_nll, harness_nll and harness_tokens (decision tokens in the step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from environments.records import Record, record_passed
from environments.roles import HARNESS_LEVELS
from training.config import TrainConfig
from training.config_fields import EpisodeDataFields, PromptStyleFields
from training.data import AGENT_SOURCES, TokenizedEpisode, collate, read_records
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.harness_data import record_level, tokenize_with_decisions
from training.losses import sft_loss
from training.modeling import forward_logits
from training.policies.roles import is_actor_turn


@dataclass
class HATConfig(EpisodeDataFields, TrainConfig, PromptStyleFields):
    data: str = ""
    """JSONL (or JSON list) of trajectory records played under harness levels (header.team.harness_level)."""
    levels: list[str] = field(default_factory=lambda: list(HARNESS_LEVELS))
    """The curriculum: one stage per level, in this order (full, guided, light, tools-only: the harness annealed away)."""
    stage_steps: list[int] = field(default_factory=list)
    """Optimizer steps of each stage, one per level, summing to max_steps; empty: max_steps split evenly, the later
    stages taking the remainder."""
    harness_weight: float = 0.5
    """Weight of each harness-decision token relative to an actor token (0: no decision supervision, a plain curriculum)."""
    passed_only: bool = False
    """Keep only records whose score says passed."""

    def problems(self) -> list[str]:
        out = super().problems()
        unknown = [level for level in self.levels if not isinstance(level, str) or level not in HARNESS_LEVELS]
        if not self.levels or unknown:
            out.append(f"levels={self.levels!r}: give one or more of {', '.join(HARNESS_LEVELS)}")
        elif len(set(self.levels)) != len(self.levels):
            out.append(f"levels={self.levels!r}: a level appears twice")
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in self.stage_steps):
            out.append(f"stage_steps={self.stage_steps!r}: must be whole numbers of steps")
        elif self.stage_steps and len(self.stage_steps) != len(self.levels):
            out.append(f"stage_steps={self.stage_steps!r}: give one count per level ({len(self.levels)}), or none for an even split")
        elif self.stage_steps and (min(self.stage_steps) < 1 or sum(self.stage_steps) != self.max_steps):
            out.append(f"stage_steps={self.stage_steps!r}: each at least 1, summing to max_steps={self.max_steps}")
        if not self.stage_steps and self.max_steps < len(self.levels):
            out.append(f"max_steps={self.max_steps!r}: at least one step per level ({len(self.levels)})")
        if self.harness_weight < 0:
            out.append(f"harness_weight={self.harness_weight!r}: must not be negative")
        return out

    def schedule(self) -> list[int]:
        """Steps per stage (stage_steps, or the even split of max_steps with the remainder on the last stages)."""
        if self.stage_steps:
            return list(self.stage_steps)
        base, extra = divmod(self.max_steps, len(self.levels))
        return [base + (1 if k >= len(self.levels) - extra else 0) for k in range(len(self.levels))]

    def stage_at(self, step: int) -> int:
        """The stage that optimizer step `step` (0-based: the number of steps done before it) belongs to."""
        end = 0
        for stage, steps in enumerate(self.schedule()):
            end += steps
            if step < end:
                return stage
        return len(self.levels) - 1


def hat_loss(logits: torch.Tensor, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
    """SFT's loss over every trained token (actor turns and weighted decisions), with the two parts' NLL as metrics.
    logits: (B, T, V) aligned with batch["input_ids"][:, 1:]; harness_mask: (B, T), 1 on decision tokens."""
    labels, mask, weights = batch["input_ids"][:, 1:], batch["mask"][:, 1:], batch["weights"][:, 1:]  # (B, T-1)
    decisions = batch["harness_mask"][:, 1:]  # (B, T-1)
    loss, metrics = sft_loss(logits, labels, mask, weights)
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none").view_as(mask)
        actor = mask * (1 - decisions)
        metrics["actor_nll"] = float((nll * actor).sum() / actor.sum().clamp(min=1.0))
        metrics["harness_nll"] = float((nll * decisions).sum() / decisions.sum().clamp(min=1.0))
        metrics["harness_tokens"] = float(decisions.sum())
    return loss, metrics


def hat_collate(items: list[TokenizedEpisode], *, pad_id: int) -> dict[str, torch.Tensor]:
    """data.collate plus harness_mask (B, T) from each episode's meta (supervise_decisions)."""
    batch = collate(items, pad_id=pad_id)
    width = batch["input_ids"].shape[1]
    flags = [e.meta["harness_mask"] + [0] * (width - len(e)) for e in items]
    batch["harness_mask"] = torch.tensor(flags, dtype=torch.float32)
    return batch


def stage_pools(records: list[Record], config: HATConfig) -> list[list[dict[str, Any]]]:
    """Per stage, the records played at its level that have an actor turn to train on."""
    found = sorted({record_level(r) for r in records})
    pools = []
    for level in config.levels:
        pool = [r for r in records if record_level(r) == level and any(is_actor_turn(s, AGENT_SOURCES) for s in r["steps"])]
        assert pool, f"no {level} records to train on in {config.data} (levels found: {', '.join(found) or 'none'})"
        pools.append(pool)
    return pools


def run(config: HATConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="hat", hooks=hooks)
    pad_id = trainer.tokenizer.pad_token_id
    records = [r for r in read_records(config.data) if not config.passed_only or record_passed(r)]
    assert records, f"no records left in {config.data} (passed_only={config.passed_only})"
    pools = stage_pools(records, config)
    tokenized: dict[int, TokenizedEpisode] = {}  # a record is tokenized when a batch first draws it: short runs read few

    def episode(record: Record) -> TokenizedEpisode:
        if id(record) not in tokenized:
            (tokenized[id(record)],) = tokenize_with_decisions(
                record, trainer.tokenizer, weight=config.harness_weight, max_tokens=config.max_tokens, style=config.prompt_style
            )
        return tokenized[id(record)]

    def loss_fn(items: list[TokenizedEpisode]) -> tuple[Any, dict[str, float]]:
        batch = {k: v.to(trainer.device) for k, v in hat_collate(items, pad_id=pad_id).items()}
        logits = forward_logits(trainer.model, batch["input_ids"], batch["attention_mask"])
        return hat_loss(logits[:, :-1], batch)

    while trainer.step < config.max_steps and not trainer.stopping():
        stage = config.stage_at(trainer.step)
        pool = pools[stage]
        micro = []
        for accum in range(config.grad_accum):
            indices = batch_indices(len(pool), config.batch_size, config.seed, trainer.step * config.grad_accum + accum)
            micro.append([episode(pool[i]) for i in indices])
        metrics = trainer.optimize(micro, loss_fn)
        metrics.update(stage=float(stage), level=float(HARNESS_LEVELS.index(config.levels[stage])), episodes_in_pool=float(len(pool)))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
