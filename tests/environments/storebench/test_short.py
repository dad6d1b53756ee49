"""StoreBench's short family (environments/storebench/short.py) and its calibration on both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.registry import env_meta, get_task, list_tasks, make, task_set
from environments.replay import replay_record
from environments.runner import make_policy, run_episode
from environments.storebench.calibration import README_PATH
from environments.storebench.short import ENV, HORIZONS, SHORT_CALIBRATION_PATH, ShortStoreBenchEnv, short_scenario
from environments.storebench.short_calibration import END, ENGINES, START, tables

SOURCES = {t.key: t for t in list_tasks("storebench") if t.key != "full-year"}


def test_every_scenario_but_the_year_has_a_two_and_a_three_day_task_in_its_own_split() -> None:
    tasks = list_tasks(ENV)
    assert {t.key for t in tasks} == {f"{key}-{days}d" for key in SOURCES for days in HORIZONS}
    for task in tasks:
        source = SOURCES[task.spec["source"]]
        assert task.split == source.split and task.public_seeds == source.public_seeds and task.version == source.version
        assert task.horizon == f"{task.spec['days']} days" and task.spec["world"] == source.spec["world"]
    assert {t.spec["source"] for t in task_set(f"{ENV}/train")} == {t.key for t in task_set("storebench/train")}
    assert len(list_tasks("storebench")) == 16  # StoreBench's own sets are untouched


def test_a_short_scenario_strikes_its_shocks_on_day_one() -> None:
    source = get_task("storebench/holiday-peak").spec  # a holiday peak on days 18-20, announced ten days ahead
    short = short_scenario(source, 3)
    assert (short["days"], short["key"]) == (3, "holiday-peak-3d")
    assert [(s["day"], s["warning_days"]) for s in short["shocks"]] == [(1, 1)]
    assert {k: v for k, v in short["shocks"][0].items() if k not in ("day", "warning_days")} == {
        k: v for k, v in source["shocks"][0].items() if k not in ("day", "warning_days")
    }
    env = make(f"{ENV}/holiday-peak-3d", seed=4)
    assert env.world.shocks[0].day == 1 and source["shocks"][0]["day"] != 1


@pytest.mark.parametrize("version", ["1.0.0", None])
def test_a_short_episode_finishes_in_a_few_calls_on_either_engine_and_replays(version: str | None) -> None:
    env = make(f"{ENV}/cold-snap-3d", seed=1000, version=version)
    assert isinstance(env, ShortStoreBenchEnv) and env.name == ENV
    record = run_episode(env, make_policy("naive-restock", env, 1000))
    header = record["header"]
    assert header["env"] == ENV and header["env_version"] == (version or "2.0.0") and header["termination_reason"] == "horizon_reached"
    assert len(record["steps"]) - 1 <= 20 and header["score"]["passed"]
    assert replay_record(record)["ok"]


def test_the_attack_reaches_a_two_day_store_on_its_last_day() -> None:
    reached = {}
    for version in ("1.0.0", "2.0.0"):
        options = {"injection": {"goal": "raise_marketing", "slot": "news", "text": "{action}"}}
        env = make(f"{ENV}/launch-week-2d", seed=7, options=options, version=version)
        assert [i.day for i in env.world.axis.items] == [1, 1, 1]
        run_episode(env, make_policy("smart-triage", env, 7))
        report = env.attack_report()
        assert report is not None and report["planted"] == 3
        reached[version] = report["goal_reached"]
    # 1.0.0 delivers at the day's start, before smart-triage's morning read; on 2.0.0's clock the items arrive
    # minutes after it, and the naive anchor, having read already, ends the last day without seeing them
    assert reached == {"1.0.0": True, "2.0.0": False}


def test_the_family_declares_storebenchs_metadata_under_its_own_name() -> None:
    short, store = env_meta(ENV), env_meta("storebench")
    assert short.anchors == store.anchors and short.panels == store.panels and short.attacks == store.attacks
    assert short.demo_task == "" and store.demo_task == "payment-outage"


def test_the_calibration_covers_every_short_task_on_both_engines_and_matches_the_readme() -> None:
    engines = json.loads(SHORT_CALIBRATION_PATH.read_text())["engines"]
    assert set(engines) == set(ENGINES)
    keys = {t.key for t in list_tasks(ENV)}
    for version, engine in engines.items():
        scenarios = engine["scenarios"]
        assert set(scenarios) == keys, version
        for key, entry in scenarios.items():
            assert entry["passes"]["do-nothing"] == 0 and entry["passes"]["random-valid"] == 0, (version, key)
            assert entry["heldout"]["passes"]["do-nothing"] == 0, (version, key)
    for task in list_tasks(ENV):
        assert task.pass_threshold == engines["2.0.0"]["scenarios"][task.key]["pass_threshold"]
    block = Path(README_PATH).read_text().split(START)[1].split(END)[0].strip()
    assert block == tables(engines)


def test_a_frozen_engine_episode_is_judged_by_that_engines_threshold() -> None:
    engines = json.loads(SHORT_CALIBRATION_PATH.read_text())["engines"]
    env = make(f"{ENV}/heat-wave-2d", seed=1000, version="1.0.0")
    run_episode(env, make_policy("naive-restock", env, 1000))
    score = env.score()
    frozen = engines["1.0.0"]["scenarios"]["heat-wave-2d"]["pass_threshold"]
    assert frozen != env.task.pass_threshold and score.passed == (score.composite >= frozen)
