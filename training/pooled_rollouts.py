"""Training rollouts from a generation pool, overlapping the next steps' generation with this step's update.

    source = PooledRollouts(pool, config, trainer, jobs=pick_jobs, options=rollout_options)
    source = pooled_rollouts(trainer, config, jobs=pick_jobs, options=rollout_options)   # one per trainer
    records = source.next()                           # the rollouts of step trainer.step

Versions: the policy version is the number of updates the weights have seen, i.e. trainer.step when the rollouts
of that step are asked for. `next()` pushes the current weights to the pool when that version is new, takes the
batch generated for this step (submitting it now if there is none), and submits the batches of the next
`max_staleness` steps with the current version, so they are sampled while this step's update runs. A batch is
used only if every record's `current - policy_version <= max_staleness`; an older one (a pool that answered
late, a schedule change) is dropped and the step's batch is generated again from the current version. Each used
record carries meta.policy_version and meta.policy_staleness.

Jobs and seeds stay a function of (seed, step) as in local rollouts; with one worker and max_staleness 0 the
records equal local ones (the worker seeds exactly as the trainer does). The recipe passes in how it picks a
step's jobs and its rollout options (training.onpolicy's pick_jobs and rollout_options), so this module,
which the recipe uses, does not import the recipe back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from environments.records import Record
from training.distributed import unwrap
from training.generation_pool import HFWorkerPool, VLLMServerPool

if TYPE_CHECKING:
    from training.onpolicy import OnPolicyConfig

JobPicker = Callable[["OnPolicyConfig", int], list[tuple[str, int]]]  # (config, step) -> (task, seed) jobs
OptionsOf = Callable[["OnPolicyConfig"], dict[str, Any]]  # config -> rollout_episodes' keyword arguments

POOL_ENV = "PRACTICUM_VLLM_POOL"  # comma-separated server URLs: the operator names them, a run config cannot


def make_pool(config: OnPolicyConfig) -> Any:
    root = Path(config.output_dir) / "policy"
    keep = config.max_staleness + 2  # every version a pending batch may name, plus the one being written
    if config.generation == "workers":
        return HFWorkerPool(root, workers=config.generation_workers, keep=keep)
    urls = [u.strip() for u in os.environ.get(POOL_ENV, "").split(",") if u.strip()]
    if not urls:
        raise ValueError(f"generation='vllm': set {POOL_ENV} to the vLLM servers' base URLs (comma-separated)")
    return VLLMServerPool(root, urls, keep=keep)


def staleness_ok(records: list[Record], current: int, max_staleness: int) -> bool:
    """True when no record's policy is more than max_staleness updates behind `current`."""
    return all(current - int(r["header"]["meta"]["policy_version"]) <= max_staleness for r in records)


class PooledRollouts:
    def __init__(self, pool: Any, config: OnPolicyConfig, trainer: Any, *, jobs: JobPicker, options: OptionsOf) -> None:
        self.pool, self.config, self.trainer = pool, config, trainer
        self.jobs, self.options = jobs, options
        self.pending: dict[int, Any] = {}  # step -> its batch being generated
        self.pushed: int | None = None
        self.dropped = 0  # stale batches thrown away (each regenerated)

    def _submit(self, step: int, version: int) -> Any:
        config = self.config
        return self.pool.submit(self.jobs(config, step), version=version, seed=config.seed * 1_000_003 + step, options=self.options(config))

    def next(self) -> list[dict[str, Any]]:
        step = current = self.trainer.step
        if self.pushed != current:
            self.pool.push(unwrap(self.trainer.model), self.trainer.tokenizer, version=current)
            self.pushed = current
        batch = self.pending.pop(step, None) or self._submit(step, current)
        for ahead in range(step + 1, min(step + self.config.max_staleness, self.config.max_steps - 1) + 1):
            if ahead not in self.pending:
                self.pending[ahead] = self._submit(ahead, current)
        records = batch.result()
        if not staleness_ok(records, current, self.config.max_staleness):
            self.dropped += 1
            records = self._submit(step, current).result()
        for record in records:
            meta = record["header"]["meta"]
            meta["policy_staleness"] = current - int(meta["policy_version"])
        assert staleness_ok(records, current, self.config.max_staleness), "a batch older than max_staleness reached training"
        return records

    def close(self) -> None:
        self.pending.clear()
        self.pool.close()


def pooled_rollouts(trainer: Any, config: OnPolicyConfig, *, jobs: JobPicker, options: OptionsOf) -> PooledRollouts:
    """The trainer's one PooledRollouts (its pool starts on first use and closes with trainer.finish())."""
    if "rollouts" not in trainer.services:
        trainer.services["rollouts"] = PooledRollouts(make_pool(config), config, trainer, jobs=jobs, options=options)
    return trainer.services["rollouts"]
