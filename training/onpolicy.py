"""What the on-policy recipes (grpo, opd, self_distill) share: the rollout config, job choice, evaluation.

`task` is one task id or a task set ("storebench/train": the registry's train split), each prompt's task drawn with
its seed. `env_options` go to every environment made (StoreBench's reward="daily"). The task's seeds are split by range: training draws from [train_seed_start, train_seed_start + train_seeds),
evaluation plays the held-out [eval_seed_start, eval_seed_start + eval_episodes) greedily.

Training rollouts come from the trainer's own model (`generation="local"`) or from a generation pool
(training/generation_pool.py; `workers` or `vllm`), which gets the weights after every update. With
`max_staleness=k > 0` the next k steps' rollouts are generated while this step trains (training/pooled_rollouts.py);
each record carries `meta.policy_version` and `meta.policy_staleness`, and a batch older than k is never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from environments.records import Record
from training.config import TrainConfig
from training.config_fields import HeldOutEvalFields, PromptStyleFields, SamplingFields
from training.data import TokenizedEpisode, collate, tokenize_record
from training.engine import Trainer, step_generator
from training.sampling import episode_stats, rollout_episodes

GENERATION_MODES = ("local", "workers", "vllm")


@dataclass
class OnPolicyConfig(SamplingFields, HeldOutEvalFields, TrainConfig, PromptStyleFields):
    onpolicy_check: ClassVar[bool] = True  # the trainer logs onpolicy_logprob_diff / onpolicy_kl every step (training.engine)
    EVAL_OPTIONAL: ClassVar[bool] = False  # the on-policy recipes always evaluate

    eval_episodes: int = 32
    """Held-out episodes per evaluation (greedy)."""
    eval_every: int = 10
    task: str = "toolgym/lookup"
    """Environment task id the policy plays, or a task set of one environment ("storebench/train"; environments.registry)."""
    env_options: dict[str, Any] = field(default_factory=dict)
    """Per-episode environment options of every episode played, training and evaluation (Env.options_schema; for
    example {"reward": "daily"}: StoreBench's per-day reward). Empty: the environment's defaults."""
    tasks_per_step: int = 4
    """Distinct (task, seed) prompts per optimizer step."""
    max_turns: int = 4
    """Agent turns per episode before the harness stops it."""
    max_prompt_tokens: int = 4096
    """An episode whose prompt grows past this many tokens ends (context_window_exceeded)."""
    decode_token_budget: int = 0
    """KV-cache tokens the CPU decode engine may hold at once over all running episodes (their caches and the
    reservations of running turns; more waits). 0: a quarter of the available memory. A budget the machine cannot
    hold is refused when the run is created, with the figure that fits."""
    generation: str = "local"
    """Who samples training rollouts: local (the trainer's model) | workers (HF generate in generation_workers CPU
    processes) | vllm (the vLLM servers the operator lists in PRACTICUM_VLLM_POOL). Pools get the weights after each update."""
    generation_workers: int = 2
    """Processes of the `workers` pool."""
    max_staleness: int = 0
    """Updates a rollout's policy may lag the weights it trains: 0 is on-policy (no overlap); k > 0 generates the
    next k steps' rollouts while this step trains (needs a pool)."""

    def problems(self) -> list[str]:
        out = super().problems()
        for name in ("tasks_per_step", "max_turns"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.max_prompt_tokens < 16:
            out.append(f"max_prompt_tokens={self.max_prompt_tokens!r}: must be at least 16")
        if self.decode_token_budget and self.decode_token_budget < self.max_prompt_tokens + self.max_new_tokens:
            out.append(
                f"decode_token_budget={self.decode_token_budget!r}: must be 0 or hold one sequence "
                f"(max_prompt_tokens + max_new_tokens = {self.max_prompt_tokens + self.max_new_tokens})"
            )
        if self.generation not in GENERATION_MODES:
            out.append(f"generation={self.generation!r}: must be one of {', '.join(GENERATION_MODES)}")
        if self.generation_workers < 1:
            out.append(f"generation_workers={self.generation_workers!r}: must be at least 1")
        if not isinstance(self.env_options, dict):
            out.append(f"env_options={self.env_options!r}: must be an object of the environment's options")
        if self.max_staleness < 0:
            out.append(f"max_staleness={self.max_staleness!r}: must not be negative")
        elif self.max_staleness and self.generation == "local":
            out.append(f"max_staleness={self.max_staleness!r}: overlapping generation needs a pool (generation='workers' or 'vllm')")
        return out


def task_ids(task: str) -> list[str]:
    """The task ids `task` names: itself, or a task set's tasks in registry order."""
    from environments import registry
    from environments.core import EnvError

    try:
        registry.get_task(task)
        return [task]
    except EnvError:  # not a single task: a task set (whose own error names the bad name if it is neither)
        return [t.id for t in registry.task_set(task)]


def pick_jobs(config: OnPolicyConfig, step: int) -> list[tuple[str, int]]:
    """(task, seed) jobs of a step, each repeated group_size times; a pure function of (seed, step). A task set's
    task is drawn per prompt after the seeds (so a single task's draws are what they always were)."""
    generator = step_generator(config.seed, step)
    draws = torch.randint(config.train_seeds, (config.tasks_per_step,), generator=generator).tolist()
    tasks = task_ids(config.task)
    picks = torch.randint(len(tasks), (config.tasks_per_step,), generator=generator).tolist() if len(tasks) > 1 else [0] * len(draws)
    return [(tasks[t], config.train_seed_start + d) for d, t in zip(draws, picks, strict=True) for _ in range(config.group_size)]


def rollout_options(config: OnPolicyConfig) -> dict[str, Any]:
    """rollout_episodes' keyword arguments for training rollouts, wherever they are played."""
    return {
        "max_turns": config.max_turns,
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "style": config.prompt_style,
        "max_prompt_tokens": config.max_prompt_tokens,
        **({"env_options": dict(config.env_options)} if config.env_options else {}),
    }


def rollouts(trainer: Trainer, config: OnPolicyConfig) -> list[dict[str, Any]]:
    if config.generation != "local":
        from training.pooled_rollouts import pooled_rollouts

        return pooled_rollouts(trainer, config, jobs=pick_jobs, options=rollout_options).next()
    torch.manual_seed(config.seed * 1_000_003 + trainer.step)  # sampling depends only on (seed, step): resumes replay it
    trainer.model.eval()
    records = rollout_episodes(trainer.model, trainer.tokenizer, pick_jobs(config, trainer.step), **rollout_options(config))
    trainer.model.train()
    return records


def staleness_stats(records: list[Record]) -> dict[str, float]:
    """policy_staleness: mean updates between the sampling policy and the trained weights (pool rollouts only)."""
    lags = [r["header"]["meta"]["policy_staleness"] for r in records if "policy_staleness" in (r["header"].get("meta") or {})]
    return {"policy_staleness": sum(lags) / len(lags)} if lags else {}


def evaluate(model: Any, tokenizer: Any, config: OnPolicyConfig) -> dict[str, float]:
    """Greedy play on the held-out seeds: reward_mean, pass_rate, valid_call_rate, turns_mean."""
    model.eval()
    tasks = task_ids(config.task)  # a task set's tasks in turn
    jobs = [(tasks[i % len(tasks)], config.eval_seed_start + i) for i in range(config.eval_episodes)]
    records = rollout_episodes(
        model,
        tokenizer,
        jobs,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=0.0,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
        env_options=dict(config.env_options) or None,
    )
    model.train()
    return {f"eval_{k}": v for k, v in episode_stats(records).items()}


def should_evaluate(config: OnPolicyConfig, step: int) -> bool:
    return step == config.max_steps or (config.eval_every > 0 and step % config.eval_every == 0)


def tokenized(records: list[Record], tokenizer: Any) -> list[tuple[int, TokenizedEpisode]]:
    """(record index, episode) pairs; an episode whose context was trimmed may yield several sequences."""
    return [(i, e) for i, r in enumerate(records) for e in tokenize_record(r, tokenizer) if sum(e.mask)]


def micro_batches(items: list[Any], count: int) -> list[list[Any]]:
    size = max(1, -(-len(items) // count))
    return [items[i : i + size] for i in range(0, len(items), size)]


def to_device(episodes: list[TokenizedEpisode], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in collate(episodes, pad_id=pad_id).items()}
