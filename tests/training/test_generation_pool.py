"""The generation pool (training/generation_pool.py) with its CPU stand-in, and bounded staleness (pooled_rollouts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

from training import ConfigError, make_config
from training.generation_pool import SNAPSHOT, HFWorkerPool, chunks, publish_snapshot
from training.modeling import load_model
from training.onpolicy import pick_jobs, rollout_options
from training.pooled_rollouts import PooledRollouts, staleness_ok
from training.sampling import rollout_episodes
from training.tiny import tiny_model_path

OPTIONS = {"max_turns": 2, "max_new_tokens": 12, "temperature": 1.0}
JOBS = [("toolgym/lookup", 3), ("toolgym/lookup", 3), ("toolgym/lookup", 4)]


def _ids(records: list[dict[str, Any]]) -> list[list[Any]]:
    return [[(step.get("token_ids"), step.get("message")) for step in r["steps"]] for r in records]


def _local(path: Path, seed: int) -> list[dict[str, Any]]:
    model, tokenizer = load_model(str(path), device=torch.device("cpu"), trainable=False)
    torch.manual_seed(seed)
    return rollout_episodes(model, tokenizer, JOBS, **OPTIONS)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pool = HFWorkerPool(tmp_path_factory.mktemp("policy"), workers=1)
    yield pool
    pool.close()
    assert not any(p.is_alive() for p in pool.processes)


def test_a_snapshot_moves_latest_and_current_and_old_ones_go(tiny_path: Path, tmp_path: Path) -> None:
    model, tokenizer = load_model(str(tiny_path), device=torch.device("cpu"), trainable=False)
    for version in range(4):
        publish_snapshot(model, tokenizer, tmp_path, version, keep=2)
    assert sorted(p.name for p in tmp_path.glob("v*")) == ["v000002", "v000003"]
    assert (tmp_path / "LATEST").read_text() == "3" and os.readlink(tmp_path / "current") == "v000003"
    assert (tmp_path / "current" / "model.safetensors").exists()


def test_a_worker_samples_what_the_trainer_would_and_reloads_each_pushed_version(pool: HFWorkerPool, tiny_path: Path) -> None:
    other = tiny_model_path(1)  # different weights: version 1 must sample differently from version 0
    for version, path in enumerate([tiny_path, other]):
        model, tokenizer = load_model(str(path), device=torch.device("cpu"), trainable=False)
        pool.push(model, tokenizer, version=version)
    first = pool.submit(JOBS, version=0, seed=11, options=OPTIONS)
    second = pool.submit(JOBS, version=1, seed=11, options=OPTIONS)  # queued behind the first: overlapping requests
    got0, got1 = first.result(timeout=300), second.result(timeout=300)
    assert [r["header"]["meta"]["policy_version"] for r in got0 + got1] == [0, 0, 0, 1, 1, 1]
    assert _ids(got0) == _ids(_local(tiny_path, 11))
    assert _ids(got1) == _ids(_local(other, 11)) != _ids(got0)


def test_a_worker_failure_is_raised_with_its_reason(pool: HFWorkerPool, tiny_path: Path) -> None:
    if not (pool.root / SNAPSHOT.format(0)).is_dir():  # pytest-xdist may run this test on a worker the push test never ran on
        model, tokenizer = load_model(str(tiny_path), device=torch.device("cpu"), trainable=False)
        pool.push(model, tokenizer, version=0)
    with pytest.raises(RuntimeError, match="generation worker failed: .*nothing-here"):
        pool.submit([("toolgym/nothing-here", 0)], version=0, seed=0, options=OPTIONS).result(timeout=300)


def test_jobs_split_into_contiguous_pieces_in_order() -> None:
    assert chunks(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
    assert chunks([1], 3) == [[1]]


class _FakePool:
    """Answers each submit with one record per job stamped with the submitted version, or a forced older one."""

    def __init__(self) -> None:
        self.pushes: list[int] = []
        self.submits: list[tuple[int, int]] = []  # (seed, version)
        self.force_version: int | None = None

    def push(self, model: Any, tokenizer: Any, *, version: int) -> None:
        self.pushes.append(version)

    def submit(self, jobs: list[Any], *, version: int, seed: int, options: dict[str, Any]) -> Any:
        self.submits.append((seed, version))
        stamped = version if self.force_version is None else self.force_version
        records = [{"header": {"meta": {"policy_version": stamped}}, "steps": []} for _ in jobs]

        class Done:
            def result(self) -> list[dict[str, Any]]:
                return records

        return Done()

    def close(self) -> None:
        pass


class _Trainer:
    def __init__(self) -> None:
        self.step, self.model, self.tokenizer, self.services = 0, object(), object(), {}


def _source(max_staleness: int, tiny_path: Path) -> tuple[PooledRollouts, _FakePool, _Trainer]:
    config = make_config(
        "grpo",
        {
            "model": str(tiny_path),
            "generation": "workers",
            "max_staleness": max_staleness,
            "max_steps": 5,
            "tasks_per_step": 1,
            "group_size": 2,
        },
    )
    pool, trainer = _FakePool(), _Trainer()
    return PooledRollouts(pool, config, trainer, jobs=pick_jobs, options=rollout_options), pool, trainer  # type: ignore[arg-type]


def test_rollouts_of_the_next_step_overlap_this_update_with_bounded_staleness(tiny_path: Path) -> None:
    source, pool, trainer = _source(1, tiny_path)
    used = []
    for step in range(5):
        trainer.step = step
        used.append([r["header"]["meta"]["policy_staleness"] for r in source.next()])
    assert pool.pushes == [0, 1, 2, 3, 4]  # the weights go out after every update
    assert used == [[0, 0], [1, 1], [1, 1], [1, 1], [1, 1]]  # step k+1 was sampled by version k, during update k
    assert [v for _, v in pool.submits] == [0, 0, 1, 2, 3]  # step 0 now, then one step ahead each time, none past the end


def test_a_batch_older_than_the_bound_is_never_used(tiny_path: Path) -> None:
    source, pool, trainer = _source(1, tiny_path)
    source.next()
    pool.force_version = 0  # the pool now answers with version-0 samples whatever it is asked
    trainer.step = 3
    with pytest.raises(AssertionError, match="older than max_staleness"):
        source.next()  # the regenerated batch is stale too: refused, never returned
    assert source.dropped == 1
    pool.force_version = None
    trainer.step = 4
    records = source.next()  # its batch, queued during step 3 from the stale pool, is dropped and made again
    assert source.dropped == 2
    assert all(r["header"]["meta"]["policy_staleness"] == 0 for r in records) and staleness_ok(records, 4, 0)


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"generation": "ray"}, "generation"),
        ({"max_staleness": 1}, "max_staleness"),
        ({"max_staleness": -1}, "max_staleness"),
        ({"generation": "workers", "generation_workers": 0}, "generation_workers"),
    ],
)
def test_generation_settings_are_checked_naming_the_field(tiny_path: Path, values: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_config("grpo", {"model": str(tiny_path), **values})
    assert field in caught.value.fields


@pytest.mark.slow
def test_grpo_trains_from_a_worker_pool_one_step_behind(tiny_path: Path, tmp_path: Path) -> None:
    from training import run_recipe

    rows: list[tuple[int, str, float]] = []
    config = {
        "model": str(tiny_path),
        "task": "toolgym/lookup",
        "max_steps": 3,
        "tasks_per_step": 1,
        "group_size": 2,
        "max_turns": 1,
        "max_new_tokens": 12,
        "eval_episodes": 1,
        "eval_every": 0,
        "generation": "workers",
        "generation_workers": 1,
        "max_staleness": 1,
        "output_dir": str(tmp_path),
    }
    result = run_recipe("grpo", config, on_metric=lambda s, n, v: rows.append((s, n, v)))
    assert result.steps == 3
    staleness = {s: v for s, n, v in rows if n == "policy_staleness"}
    assert staleness == {1: 0.0, 2: 1.0, 3: 1.0}  # step 1 sampled by its own weights, later ones one update behind
    assert sorted(p.name for p in (tmp_path / "policy").glob("v*")) == ["v000000", "v000001", "v000002"]
