"""Anchor policies, the policy registry, and the published calibration."""

from __future__ import annotations

import pytest

from environments.core import EnvError
from environments.registry import list_tasks, make
from environments.runner import make_policy, run_episode
from environments.storebench.calibration import ANCHORS, README_PATH, TABLE_END, TABLE_START, table_markdown
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scoring import load_calibration

from .conftest import new_store


def _play(task: str, policy: str, seed: int, version: str | None = None) -> dict:
    env = make(f"storebench/{task}", seed=seed, version=version)
    return run_episode(env, make_policy(policy, env, seed))["header"]


def test_every_anchor_is_found_by_name_and_unknown_names_are_refused(store) -> None:
    for name in ANCHORS:
        assert make_policy(name, store, 1).name == name
    with pytest.raises(EnvError, match="choose one of"):
        make_policy("genius", store, 1)


def test_smart_triage_passes_a_private_seed_and_oracle_beats_it() -> None:
    smart = _play("heat-wave", "smart-triage", 777)
    oracle = _play("heat-wave", "oracle", 777)
    nothing = _play("heat-wave", "do-nothing", 777)
    assert smart["score"]["passed"] and smart["termination_reason"] == "horizon_reached"
    assert oracle["score"]["details"]["profit_dollars"] > smart["score"]["details"]["profit_dollars"]
    assert oracle["score"]["composite"] >= smart["score"]["composite"] > nothing["score"]["composite"]


def test_random_valid_uses_many_tools_and_stays_deterministic() -> None:
    def names(seed: int) -> list[str]:
        env = new_store("launch-week", seed)
        record = run_episode(env, make_policy("random-valid", env, seed), max_steps=200)
        return [s["tool_calls"][0]["name"] for s in record["steps"][1:]]

    first = names(4)
    assert first == names(4)
    assert len(set(first)) >= 20


def test_the_calibration_covers_every_scenario_and_matches_the_readme() -> None:
    data = load_calibration(StoreBenchEnv.version)
    assert set(data) == {t.key for t in list_tasks("storebench")}
    cells = sum(len(s["composites"]["smart-triage"]) for s in data.values())
    for key, entry in data.items():
        assert entry["passes"]["do-nothing"] == 0 and entry["passes"]["random-valid"] == 0, key
        assert min(entry["composites"]["oracle"]) > 0 and sum(entry["composites"]["oracle"]) > sum(entry["composites"]["smart-triage"]), key
    smart_passes = sum(s["passes"]["smart-triage"] for s in data.values())
    assert smart_passes >= 0.9 * cells
    readme = README_PATH.read_text()
    assert readme.split(TABLE_START)[1].split(TABLE_END)[0].strip() == table_markdown(data)


def test_registered_thresholds_come_from_the_calibration() -> None:
    data = load_calibration(StoreBenchEnv.version)
    for task in list_tasks("storebench"):
        assert task.pass_threshold == data[task.key]["pass_threshold"]


@pytest.mark.slow
def test_a_public_calibration_cell_reproduces_exactly() -> None:
    data = load_calibration(StoreBenchEnv.version)["price-war"]
    seed = make("storebench/price-war", 0).task.public_seeds[1]
    assert _play("price-war", "smart-triage", seed)["score"]["composite"] == data["composites"]["smart-triage"][1]
    frozen = load_calibration("1.0.0")["price-war"]  # and the frozen engine's cell, against its own section
    assert _play("price-war", "smart-triage", seed, version="1.0.0")["score"]["composite"] == frozen["composites"]["smart-triage"][1]
