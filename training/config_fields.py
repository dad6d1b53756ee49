"""Groups of config fields that several recipes share, each defined once with its docs and checks (mixins).

    @dataclass
    class FlowrightConfig(AggregationFields, ClipFields, SamplingFields, HeldOutEvalFields, TrainConfig, PromptStyleFields):
        ...

A recipe lists the groups it has before `TrainConfig` (their fields follow TrainConfig's, in reverse order of the
list) and `PromptStyleFields` after it (its fields come first, where they always were). Each group's `problems()`
extends `super().problems()`, so every group's checks run. A recipe that needs another default redeclares the field
(it keeps its place); a ClassVar says where a recipe's rule differs (GRPO's groups need two samples, ascent may be
greedy). The fields' names and defaults are what checkpoints and run hashes record: tests/training/test_config.py
pins them for every recipe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from training.config import ConfigFields
from training.data import PromptStyle
from training.losses import AGGREGATIONS


@dataclass
class PromptStyleFields(ConfigFields):
    """How prompts are rendered, so every recipe samples and trains in one style (sft, hat, evoke, raised, federation,
    flowright, the on-policy recipes)."""

    compact_tools: bool = False
    """Prompt style: tools as one `name(args)` line each in the system prompt instead of JSON schemas (small
    contexts; a zoo model's zoo.json says which style it expects)."""
    max_result_chars: int = 0
    """Prompt style: tool results cut to this many characters, as the harness does (0: whole results)."""

    @property
    def prompt_style(self) -> PromptStyle:
        return PromptStyle(compact_tools=self.compact_tools, max_result_chars=self.max_result_chars)

    def problems(self) -> list[str]:
        out = super().problems()
        if self.max_result_chars < 0:
            out.append(f"max_result_chars={self.max_result_chars!r}: must not be negative")
        return out


@dataclass
class EpisodeDataFields(ConfigFields):
    """Trajectory records read from a file and trained on in micro-batches (sft, hat, evoke)."""

    DATA_REQUIRED: ClassVar[bool] = True  # False: the recipe has another source of episodes and checks it itself

    data: str = ""
    """JSONL (or JSON list) of canonical trajectory records to train on."""
    batch_size: int = 8
    """Episodes per micro-batch."""
    max_tokens: int = 2048
    """Episodes longer than this are truncated (masks cut alike)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.DATA_REQUIRED and not self.data:
            out.append("data='': give a JSONL file of trajectory records")
        if self.batch_size < 1:
            out.append(f"batch_size={self.batch_size!r}: must be at least 1")
        if self.max_tokens < 2:
            out.append(f"max_tokens={self.max_tokens!r}: must be at least 2")
        return out


@dataclass
class TrainSeedFields(ConfigFields):
    """The training seeds [train_seed_start, train_seed_start + train_seeds) (the on-policy recipes, raised, flowright,
    evoke, ideacritic, ideapropose)."""

    train_seed_start: int = 0
    """First training seed."""
    train_seeds: int = 1000
    """Number of training seeds to draw from."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.train_seed_start < 0:
            out.append(f"train_seed_start={self.train_seed_start!r}: must not be negative")
        if self.train_seeds < 1:
            out.append(f"train_seeds={self.train_seeds!r}: must be at least 1")
        return out


@dataclass
class HeldOutEvalFields(TrainSeedFields):
    """The recipe's own evaluation during training, greedy play of held-out seeds disjoint from the training seeds
    (the on-policy recipes, raised, flowright)."""

    EVAL_OPTIONAL: ClassVar[bool] = True  # eval_episodes=0 switches the evaluation off (False: at least one episode)

    eval_seed_start: int = 100_000
    """First held-out evaluation seed (keep the range disjoint from the training seeds)."""
    eval_episodes: int = 8
    """Held-out episodes per evaluation, played greedily (0: no evaluation)."""
    eval_every: int = 0
    """Evaluate every N steps (0: only at the start and the end)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.EVAL_OPTIONAL and self.eval_episodes < 0:
            out.append(f"eval_episodes={self.eval_episodes!r}: must not be negative")
        if not self.EVAL_OPTIONAL and self.eval_episodes < 1:
            out.append(f"eval_episodes={self.eval_episodes!r}: must be at least 1")
        if self.eval_every < 0:
            out.append(f"eval_every={self.eval_every!r}: must not be negative")
        train_end = self.train_seed_start + self.train_seeds
        if self.train_seed_start < self.eval_seed_start + self.eval_episodes and self.eval_seed_start < train_end:
            out.append(
                f"eval_seed_start={self.eval_seed_start!r}: held-out seeds overlap the training seeds [{self.train_seed_start}, {train_end})"
            )
        return out


@dataclass
class SamplingFields(ConfigFields):
    """How training samples are drawn: group_size samples per prompt at a temperature, each turn up to max_new_tokens
    (the on-policy recipes, flowright, ideacritic, ideapropose)."""

    MIN_GROUP_SIZE: ClassVar[int] = 1  # 2 where advantages are group-relative (GRPO and its kin)
    GREEDY_OK: ClassVar[bool] = False  # True: temperature 0 (greedy) is allowed

    group_size: int = 8
    """Samples per prompt (rollouts, or answers): the group of a group-relative advantage."""
    temperature: float = 1.0
    """Sampling temperature of the training samples."""
    max_new_tokens: int = 64
    """Token limit of one sampled turn (an agent turn, a role's turn, an answer)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.group_size < self.MIN_GROUP_SIZE:
            why = f"group-relative advantages need at least {self.MIN_GROUP_SIZE} samples per group"
            out.append(f"group_size={self.group_size!r}: {why if self.MIN_GROUP_SIZE > 1 else 'must be at least 1'}")
        if self.GREEDY_OK and self.temperature < 0:
            out.append(f"temperature={self.temperature!r}: must not be negative (0 is greedy)")
        if not self.GREEDY_OK and not self.temperature > 0:
            out.append(f"temperature={self.temperature!r}: must be positive for sampling")
        if self.max_new_tokens < 1:
            out.append(f"max_new_tokens={self.max_new_tokens!r}: must be at least 1")
        return out


@dataclass
class ClipFields(ConfigFields):
    """The clipped policy ratio of a policy-gradient update (grpo and its kin, caddie, flowright, ideacritic,
    ideapropose)."""

    clip_low: float = 0.2
    """Lower clip of the ratio: 1 - clip_low."""
    clip_high: float = 0.28
    """Upper clip of the ratio: 1 + clip_high ("clip-higher")."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not 0 <= self.clip_low < 1:
            out.append(f"clip_low={self.clip_low!r}: must be in [0, 1)")
        if self.clip_high < 0:
            out.append(f"clip_high={self.clip_high!r}: must not be negative")
        return out


@dataclass
class AggregationFields(ConfigFields):
    """How per-token losses become one number (grpo and its kin, caddie, flowright)."""

    aggregation: str = "token-mean"
    """token-mean | seq-mean | seq-sum-norm: how per-token losses become one number."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.aggregation not in AGGREGATIONS:
            out.append(f"aggregation={self.aggregation!r}: must be one of {', '.join(AGGREGATIONS)}")
        return out


@dataclass
class ReferenceKLFields(ConfigFields):
    """A KL penalty to the start model (sft, grpo and its kin, caddie)."""

    kl_coef: float = 0.0
    """Weight of the KL of the trained model to its start model per trained token, added to the loss (0: none, and no
    reference model is loaded). sft: the full-vocabulary reverse KL; grpo, caddie: the k3 estimate on sampled tokens."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.kl_coef < 0:
            out.append(f"kl_coef={self.kl_coef!r}: must not be negative")
        return out


@dataclass
class TopKFields(ConfigFields):
    """A full-vocabulary KL compared on the student's top-k tokens (the distillation recipes, raised)."""

    top_k: int = 0
    """Compare the full-vocabulary KL on the student's top-k tokens plus a tail bucket (0: the whole vocabulary)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.top_k < 0:
            out.append(f"top_k={self.top_k!r}: must not be negative")
        return out


@dataclass
class DistillLossFields(TopKFields):
    """Which reverse KL to the teacher a distillation trains on (opd and its kin, self_distill, gated_sd)."""

    loss: str = "sampled"
    """sampled (reverse KL on the student's sampled tokens) | full (full-vocabulary reverse KL per position; top_k
    applies)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.loss not in ("sampled", "full"):
            out.append(f"loss={self.loss!r}: must be sampled or full")
        return out


@dataclass
class TeacherWeightsFields(ConfigFields):
    """Whose weights a self-teacher runs on (self_distill, gated_sd, raised)."""

    teacher_weights: str = "live"
    """live (the model being trained, without gradient) | frozen (a copy of the starting model)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.teacher_weights not in ("live", "frozen"):
            out.append(f"teacher_weights={self.teacher_weights!r}: must be live or frozen")
        return out
