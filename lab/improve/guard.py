"""The test-split leakage guard: no (task, seed) the loop reports on may be trained on or used to choose a checkpoint.

A key is (env, task key, seed). The guard runs twice: when a loop is created, over what its plan will use (the
picked episodes, the anchor demonstrations, an on-policy recipe's training seeds, the dev seeds); and when the
dataset is written, over the header of every line, so a recovery branch or a success from a test seed is
refused whatever route it came by.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from environments import registry
from environments.core import EnvError
from environments.records import Record
from lab.errors import DomainError

Key = tuple[str, str, int]


def test_keys(config: dict[str, Any]) -> set[Key]:
    """Every (env, task, seed) of the loop's test split."""
    return {(t.env, t.key, seed) for t in registry.task_set(config["test_task_set"]) for seed in config["test_seeds"]}


def task_keys(task_set: str, seeds: Iterable[int]) -> set[Key]:
    seeds = list(seeds)
    return {(t.env, t.key, seed) for t in registry.task_set(task_set) for seed in seeds}


def record_key(record: Record) -> Key:
    header = record.get("header") or {}
    return (str(header.get("env")), str(header.get("task")), int(header.get("seed") or 0))


def leakage_refuse(*, keys: Iterable[Key], tested: set[Key], what: str, field: str) -> None:
    """DomainError("test_leakage") naming the first (lowest) task and seed of `keys` that the loop tests on."""
    leaked = sorted(set(keys) & tested)
    if leaked:
        env, task, seed = leaked[0]
        more = f" (and {len(leaked) - 1} more)" if len(leaked) > 1 else ""
        raise DomainError(
            "test_leakage",
            f"{what} contains {env}/{task} seed {seed}{more}, which the loop tests on; test seeds must stay out of "
            "training and checkpoint selection: choose other test seeds or leave that data out",
            path=field,
            task=f"{env}/{task}",
            seed=seed,
        )


def loop_plan_check(*, config: dict[str, Any], episode_keys: Iterable[Key], success_keys: Iterable[Key] = ()) -> None:
    """At creation: refuse a plan whose data or selection would touch the test split."""
    tested = test_keys(config)
    if config["sources"].get("successes"):
        leakage_refuse(keys=success_keys, tested=tested, what="the successful episodes (dataset source)", field="test_seeds")
    leakage_refuse(
        keys=task_keys(config["dev_task_set"], config["dev_seeds"]),
        tested=tested,
        what="the dev split (checkpoint selection)",
        field="dev_seeds",
    )
    leakage_refuse(keys=episode_keys, tested=tested, what="the picked episodes", field="episodes")
    # Disjoint by construction, whatever the task sets: a seed that chose the checkpoint never reports on it.
    shared = sorted(set(config["dev_seeds"]) & set(config["test_seeds"]))
    if shared:
        raise DomainError(
            "test_leakage",
            f"seeds {shared[:5]} are both dev seeds (checkpoint selection) and test seeds, which the loop "
            "tests on; choose test seeds that are not dev seeds",
            path="test_seeds",
            seed=shared[0],
        )
    env = next(iter(registry.task_set(config["test_task_set"]))).env
    if config["sources"].get("anchors"):
        leakage_refuse(
            keys=task_keys(f"{env}/train", config["anchor_seeds"]), tested=tested, what="the anchor demonstrations", field="anchor_seeds"
        )
    recipe_config = config["recipe_config"]
    if recipe_config.get("task"):
        start = int(recipe_config.get("train_seed_start", 0))
        count = int(recipe_config.get("train_seeds", 1000))
        try:
            task = registry.get_task(str(recipe_config["task"]))
        except EnvError as exc:  # a task set or a split ("toolgym/train") is not one task
            raise DomainError(
                "invalid_loop", f"recipe_config.task: {exc.message}; give one task id such as {env}/<task>", path="recipe_config.task"
            ) from None
        leaked = [
            (task.env, task.key, seed)
            for seed in sorted(s for (e, k, s) in tested if (e, k) == (task.env, task.key))
            if start <= seed < start + count
        ]
        leakage_refuse(
            keys=leaked,
            tested=tested,
            what=f"the {config['recipe']} training seeds ({start}..{start + count - 1})",
            field="recipe_config.train_seed_start",
        )
