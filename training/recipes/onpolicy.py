"""What the on-policy recipes (grpo, opd, self_distill) share: the rollout config, job choice, evaluation.

The task's seeds are split by range: training draws from [train_seed_start, train_seed_start + train_seeds),
evaluation plays the held-out [eval_seed_start, eval_seed_start + eval_episodes) greedily.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from training.config import TrainConfig
from training.data import PromptStyleFields, TokenizedEpisode, collate, tokenize_record
from training.engine import Trainer, step_generator
from training.sampling import episode_stats, rollout_episodes


@dataclass
class OnPolicyConfig(TrainConfig, PromptStyleFields):
    task: str = "toolgym/lookup"
    """Environment task id the policy plays (environments.registry)."""
    tasks_per_step: int = 4
    """Distinct (task, seed) prompts per optimizer step."""
    group_size: int = 8
    """Rollouts per prompt; GRPO's group."""
    train_seed_start: int = 0
    """First training seed."""
    train_seeds: int = 1000
    """Number of training seeds to draw from."""
    eval_seed_start: int = 100_000
    """First held-out evaluation seed (keep the range disjoint from training)."""
    eval_episodes: int = 32
    """Held-out episodes per evaluation (greedy)."""
    eval_every: int = 10
    """Evaluate every N steps (0: only at the start and the end)."""
    max_turns: int = 4
    """Agent turns per episode before the harness stops it."""
    max_new_tokens: int = 64
    """Token limit of one agent turn."""
    temperature: float = 1.0
    """Sampling temperature of training rollouts."""
    max_prompt_tokens: int = 4096
    """An episode whose prompt grows past this many tokens ends (context_window_exceeded)."""

    def problems(self) -> list[str]:
        out = super().problems() + self.style_problems()
        for name in ("tasks_per_step", "group_size", "train_seeds", "eval_episodes", "max_turns", "max_new_tokens"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.max_prompt_tokens < 16:
            out.append(f"max_prompt_tokens={self.max_prompt_tokens!r}: must be at least 16")
        if self.eval_every < 0:
            out.append(f"eval_every={self.eval_every!r}: must not be negative")
        if not self.temperature > 0:
            out.append(f"temperature={self.temperature!r}: must be positive for on-policy sampling")
        train_end = self.train_seed_start + self.train_seeds
        if self.train_seed_start < self.eval_seed_start + self.eval_episodes and self.eval_seed_start < train_end:
            out.append(
                f"eval_seed_start={self.eval_seed_start!r}: held-out seeds overlap the training seeds [{self.train_seed_start}, {train_end})"
            )
        return out


def pick_jobs(config: OnPolicyConfig, step: int) -> list[tuple[str, int]]:
    """(task, seed) jobs of a step, each repeated group_size times; a pure function of (seed, step)."""
    draws = torch.randint(config.train_seeds, (config.tasks_per_step,), generator=step_generator(config.seed, step)).tolist()
    return [(config.task, config.train_seed_start + d) for d in draws for _ in range(config.group_size)]


def rollouts(trainer: Trainer, config: OnPolicyConfig) -> list[dict[str, Any]]:
    torch.manual_seed(config.seed * 1_000_003 + trainer.step)  # sampling depends only on (seed, step): resumes replay it
    trainer.model.eval()
    records = rollout_episodes(
        trainer.model,
        trainer.tokenizer,
        pick_jobs(config, trainer.step),
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
    )
    trainer.model.train()
    return records


def evaluate(model: Any, tokenizer: Any, config: OnPolicyConfig) -> dict[str, float]:
    """Greedy play on the held-out seeds: reward_mean, pass_rate, valid_call_rate, turns_mean."""
    model.eval()
    jobs = [(config.task, config.eval_seed_start + i) for i in range(config.eval_episodes)]
    records = rollout_episodes(
        model,
        tokenizer,
        jobs,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=0.0,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
    )
    model.train()
    return {f"eval_{k}": v for k, v in episode_stats(records).items()}


def should_evaluate(config: OnPolicyConfig, step: int) -> bool:
    return step == config.max_steps or (config.eval_every > 0 and step % config.eval_every == 0)


def tokenized(records: list[dict[str, Any]], tokenizer: Any) -> list[tuple[int, TokenizedEpisode]]:
    """(record index, episode) pairs; an episode whose context was trimmed may yield several sequences."""
    return [(i, e) for i, r in enumerate(records) for e in tokenize_record(r, tokenizer) if sum(e.mask)]


def micro_batches(items: list[Any], count: int) -> list[list[Any]]:
    size = max(1, -(-len(items) // count))
    return [items[i : i + size] for i in range(0, len(items), size)]


def to_device(episodes: list[TokenizedEpisode], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in collate(episodes, pad_id=pad_id).items()}
