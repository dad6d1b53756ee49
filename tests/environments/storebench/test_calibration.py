"""Calibration: thresholds from calibration seeds only, pass rates on disjoint held-out seeds, per engine version."""

from __future__ import annotations

import copy
import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from environments.cli import main
from environments.core import EnvError, ToolCall
from environments.registry import get_task, list_tasks
from environments.storebench import calibration
from environments.storebench.calibration import (
    ANCHORS,
    DEFAULT_HELDOUT_SEEDS,
    HELDOUT_END,
    HELDOUT_START,
    README_PATH,
    TABLE_END,
    TABLE_START,
    calibrate,
    calibration_write,
    check_heldout_seeds,
    ci95,
    heldout_markdown,
    readme_from_json,
    readme_write,
    table_markdown,
)
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scoring import CALIBRATION_PATH, load_calibration

QUALITY = {"service": 0.9, "satisfaction": 0.8, "inventory": 0.7, "cash_safety": 1.0}
# Normalised profit per anchor: idle stores lose, the oracle earns most.
PROFIT = {"do-nothing": -0.3, "random-valid": -0.5, "naive-restock": 0.6, "smart-triage": 0.8, "oracle": 1.2}


def fake_cells(jobs: list[tuple[str, int, str]], heldout_profit: dict[str, float]) -> list[dict[str, Any]]:
    """What run_cell returns, without playing: calibration seeds get PROFIT, held-out seeds `heldout_profit`."""
    cells = []
    for task_id, seed, anchor in jobs:
        public = seed in get_task(task_id).public_seeds
        profit = (PROFIT if public else heldout_profit)[anchor] + seed % 3 * 0.01
        cells.append(
            {
                "task": task_id,
                "seed": seed,
                "anchor": anchor,
                "termination_reason": "horizon_reached",
                "profit": profit,
                "components": dict(QUALITY),
            }
        )
    return cells


def block(text: str, start: str, end: str) -> str:
    return text.split(start)[1].split(end)[0].strip()


def test_the_default_heldout_seeds_are_disjoint_from_every_calibration_seed() -> None:
    for task in list_tasks("storebench"):
        assert not set(DEFAULT_HELDOUT_SEEDS) & set(task.public_seeds), task.key
    assert len(DEFAULT_HELDOUT_SEEDS) >= 10


def test_it_refuses_heldout_seeds_that_a_scenario_calibrates_on() -> None:
    holiday = get_task("storebench/holiday-peak")  # public seeds 101-103
    with pytest.raises(EnvError, match=r"heldout seeds \[101, 102, 103\] are calibration \(public\) seeds of holiday-peak"):
        check_heldout_seeds([holiday], list(range(100, 110)))
    with pytest.raises(EnvError, match="heldout seeds"):
        calibrate(tasks=["holiday-peak"], heldout_seeds="100-109", write=False, progress=None)


def test_the_cli_names_the_overlap_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "storebench", "--tasks", "holiday-peak", "--heldout-seeds", "103"]) == 2
    assert "heldout seeds [103] are calibration (public) seeds of holiday-peak" in capsys.readouterr().err
    assert main(["calibrate", "storebench", "--tasks", "no-such-scenario"]) == 2
    assert "no StoreBench scenario 'storebench/no-such-scenario'" in capsys.readouterr().err


def test_thresholds_depend_only_on_calibration_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    results = []
    for heldout_profit in (PROFIT, {**PROFIT, "smart-triage": 0.0, "oracle": 3.0}):
        monkeypatch.setattr(calibration, "run_cells", lambda jobs, profit=heldout_profit, **_: fake_cells(jobs, profit))
        results.append(calibrate(tasks=["launch-week", "heat-wave"], heldout_seeds=[1000, 1001, 1002], write=False, progress=None))
    first, second = results
    for key in ("launch-week", "heat-wave"):
        thresholds = {k: v for k, v in first[key].items() if k != "heldout"}
        assert thresholds == {k: v for k, v in second[key].items() if k != "heldout"}
        assert first[key]["heldout"]["seeds"] == [1000, 1001, 1002]
        assert first[key]["heldout"]["passes"]["smart-triage"] == 3 and second[key]["heldout"]["passes"]["smart-triage"] == 0
        assert first[key]["heldout"] != second[key]["heldout"]
    assert first["launch-week"]["profit_reference"] == pytest.approx(1.21, abs=1e-6)  # the oracle's calibration-seed mean
    assert first["launch-week"]["profit_floor"] == pytest.approx(-0.3 + 0.02 + max(s % 3 for s in (201, 202, 203)) * 0.01, abs=1e-6)


def test_the_readme_blocks_are_regenerated_from_the_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration, "run_cells", lambda jobs, **_: fake_cells(jobs, PROFIT))
    result = calibrate(tasks=["launch-week"], heldout_seeds=[1000, 1001], write=False, progress=None)
    path, readme = tmp_path / "calibration.json", tmp_path / "README.md"
    path.write_text(json.dumps({"engines": {"0.9.0": {"scenarios": {"old": {}}}}}))
    readme.write_text(f"intro\n{TABLE_START}\nstale\n{TABLE_END}\nmiddle\n{HELDOUT_START}\nstale\n{HELDOUT_END}\nend\n")
    run = {"scenarios": 1, "heldout_seeds": [1000, 1001], "episodes": 25, "workers": 2, "wall_s": 3.2}
    engine = calibration_write(result, run=run, path=path)
    readme_write(engine, readme)
    stored = load_calibration(StoreBenchEnv.version, path)
    assert stored == copy.deepcopy(result) and load_calibration("0.9.0", path) == {"old": {}}  # other engines stay
    text = readme.read_text()
    assert text.startswith("intro\n") and "\nmiddle\n" in text and text.endswith("end\n") and "stale" not in text
    assert block(text, TABLE_START, TABLE_END) == table_markdown(stored)
    held = block(text, HELDOUT_START, HELDOUT_END)
    assert held == heldout_markdown(stored, run=json.loads(path.read_text())["engines"][StoreBenchEnv.version]["last_run"])
    assert "held-out seeds 1000, 1001 (n = 2 per cell)" in held and "Last run: 25 episodes" in held
    assert "| launch-week | train | " in held and "**2/2 (100%)**" in held
    # A later run over another scenario, on other seeds, replaces only that scenario and says the seeds differ.
    more = calibrate(tasks=["heat-wave"], heldout_seeds=[1005, 1006, 1007], write=False, progress=None)
    engine = calibration_write(more, run={**run, "heldout_seeds": [1005, 1006, 1007]}, path=path)
    readme_write(engine, readme)
    assert set(engine["scenarios"]) == {"launch-week", "heat-wave"} and engine["scenarios"]["launch-week"] == result["launch-week"]
    held = block(readme.read_text(), HELDOUT_START, HELDOUT_END)
    assert "held-out seeds differ by scenario" in held and "**5/5 (100%)**" in held


def test_the_published_tables_match_the_calibration_json() -> None:
    engine = json.loads(CALIBRATION_PATH.read_text())["engines"][StoreBenchEnv.version]
    readme = README_PATH.read_text()
    assert block(readme, TABLE_START, TABLE_END) == table_markdown(engine["scenarios"])
    assert block(readme, HELDOUT_START, HELDOUT_END) == heldout_markdown(engine["scenarios"], run=engine["last_run"])
    for key, entry in engine["scenarios"].items():
        assert len(entry["heldout"]["seeds"]) >= 10, key
        assert not set(entry["heldout"]["seeds"]) & set(get_task(f"storebench/{key}").public_seeds), key


def test_calibration_of_another_engine_or_scenario_version_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"engines": {"0.9.0": {"scenarios": {"launch-week": {"scenario_version": "1.0", "pass_threshold": 0.9}}}}}))
    assert load_calibration(StoreBenchEnv.version, path) == {}
    assert load_calibration("0.9.0", path)["launch-week"]["pass_threshold"] == 0.9
    assert load_calibration(StoreBenchEnv.version, tmp_path / "missing.json") == {}
    # The registered thresholds are this engine's, for each scenario's current version.
    current = load_calibration(StoreBenchEnv.version)
    for task in list_tasks("storebench"):
        assert current[task.key]["scenario_version"] == task.version
        assert task.pass_threshold == current[task.key]["pass_threshold"]


@pytest.mark.slow
def test_a_small_calibration_runs_end_to_end(tmp_path: Path) -> None:
    path, readme = tmp_path / "calibration.json", tmp_path / "README.md"
    readme.write_text(f"{TABLE_START}\n{TABLE_END}\n{HELDOUT_START}\n{HELDOUT_END}\n")
    result = calibrate(tasks=["launch-week"], heldout_seeds="1000-1002", workers=2, path=path, readme=readme, progress=None)
    entry = result["launch-week"]
    published = load_calibration(StoreBenchEnv.version)["launch-week"]
    # Deterministic: the same calibration seeds give the published references and threshold.
    for field in ("profit_floor", "profit_reference", "pass_threshold", "composites"):
        assert entry[field] == published[field], field
    held = entry["heldout"]
    assert held["seeds"] == [1000, 1001, 1002]
    for anchor in ANCHORS:
        assert len(held["composites"][anchor]) == 3
        assert held["passes"][anchor] == sum(c >= entry["pass_threshold"] for c in held["composites"][anchor])
        if published["heldout"]["seeds"][:3] == [1000, 1001, 1002]:
            assert held["composites"][anchor] == published["heldout"]["composites"][anchor][:3], anchor
    assert held["passes"]["do-nothing"] == 0 and held["passes"]["oracle"] == 3
    run = json.loads(path.read_text())["engines"][StoreBenchEnv.version]["last_run"]
    assert run["episodes"] == 5 * (3 + 3) and run["wall_s"] > 0
    assert "| launch-week | train | 0." in readme.read_text()


def test_the_confidence_interval_uses_students_t_for_few_seeds() -> None:
    values = [0.5, 0.7, 0.6, 0.8, 0.4, 0.9, 0.5, 0.6, 0.7, 0.8]  # n = 10, 9 degrees of freedom
    assert ci95(values) == pytest.approx(2.262 * statistics.stdev(values) / math.sqrt(10))
    assert ci95([0.5] * 12) == 0.0 and ci95([0.7]) == 0.0
    assert ci95(values + values[:2]) == pytest.approx(2.228 * statistics.stdev(values + values[:2]) / math.sqrt(12))  # df 11: df 10's t


def test_a_frozen_engines_episode_is_scored_against_that_engines_calibration() -> None:
    class Newer(StoreBenchEnv):  # as if engine 1.0.0 were frozen beside an uncalibrated newer one
        version = "9.9.9"
        frozen_versions = ("1.0.0",)

    task = get_task("storebench/heat-wave")
    published = load_calibration("1.0.0")["heat-wave"]
    scores = {}
    for version in ("1.0.0", None):
        env = Newer(task, 5, version=version)
        env.reset()
        while not env.done:
            env.step(ToolCall(name="end_window", arguments={}))
        scores[version] = env.score().details
    assert (scores["1.0.0"]["profit_floor"], scores["1.0.0"]["profit_reference"]) == (
        published["profit_floor"],
        published["profit_reference"],
    )
    assert (scores[None]["profit_floor"], scores[None]["profit_reference"]) == (0.0, 0.6)  # never another engine's references


def test_the_readme_tables_can_be_rewritten_from_the_json_alone(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"{TABLE_START}\nstale\n{TABLE_END}\n{HELDOUT_START}\nstale\n{HELDOUT_END}\n")
    readme_from_json(CALIBRATION_PATH, readme)
    published = README_PATH.read_text()
    for start, end in ((TABLE_START, TABLE_END), (HELDOUT_START, HELDOUT_END)):
        assert block(readme.read_text(), start, end) == block(published, start, end)
    other = tmp_path / "calibration.json"
    other.write_text(json.dumps({"engines": {"0.1.0": {"scenarios": {}}}}))
    with pytest.raises(EnvError, match=f"no section for engine {StoreBenchEnv.version}"):
        readme_from_json(other, readme)
