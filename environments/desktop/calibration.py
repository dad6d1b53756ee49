"""Calibration: every anchor on every task over evaluation seeds, with and without drift.

    python -m environments calibrate desktop                 # seeds 1000-1004; prints the table
    python -m environments.desktop.calibration [SEEDS]        # the same, and rewrites calibration.json and the README table

Each cell is the mean composite / pass rate without drift; the last column is each anchor's robustness
(drift.robustness: its mean score with drift "high" over its mean without, on the same tasks and seeds).
Thresholds: the right final state with no collateral damage scores at least 1 - EFFICIENCY_WEIGHT = 0.8
whatever the path (grading.py), so every task's threshold is 0.8 and the efficiency credit only ranks passing
runs; calibration checks that the oracle and the scripted users pass and random-valid does not.
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import fmean
from typing import Any

from environments import stats
from environments.desktop.drift import robustness
from environments.desktop.grading import EFFICIENCY_WEIGHT
from environments.records import record_score

HERE = Path(__file__).parent
CALIBRATION_PATH = HERE / "calibration.json"
README_PATH = HERE / "README.md"
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"
ANCHORS = ("random-valid", "gui-only", "cli-preferring", "oracle")
TASKS = ("move-files", "reply-mail", "change-setting", "edit-cell", "schedule-event", "buy-cheapest", "errand")
DEFAULT_SEEDS = "1000-1004"
ENGINE = "1"  # thresholds of another engine version are stale and ignored


def load_thresholds(path: Path = CALIBRATION_PATH) -> dict[str, float]:
    return stats.load_thresholds(path, ENGINE)


def _run(anchor: str, task: str, seed: int, drift: str) -> tuple[float, float]:
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    env = make(f"desktop/{task}", seed=seed, options={"drift": drift} if drift != "none" else None)
    score = record_score(run_episode(env, make_policy(anchor, env, seed)))
    return score["composite"], float(score["passed"])


def calibrate(*, workers: int = 1, heldout_seeds: str = DEFAULT_SEEDS, tasks: list[str] | None = None) -> dict[str, Any]:
    """{"seeds", "cells": {anchor: {task: {"score", "passed", "drifted"}}}, "robustness": {anchor}, "thresholds"}.
    Serial: an episode takes milliseconds."""
    from environments.seeds import seeds_parse

    seeds = seeds_parse(heldout_seeds)
    chosen = [t for t in TASKS if tasks is None or t in tasks]
    cells: dict[str, dict[str, dict[str, float]]] = {}
    scores: dict[str, dict[str, list[float]]] = {}
    for anchor in ANCHORS:
        for task in chosen:
            plain = [_run(anchor, task, seed, "none") for seed in seeds]
            drifted = [_run(anchor, task, seed, "high")[0] for seed in seeds]
            cells.setdefault(anchor, {})[task] = {
                "score": fmean(s for s, _ in plain),
                "passed": fmean(p for _, p in plain),
                "drifted": fmean(drifted),
            }
            scores.setdefault(anchor, {"none": [], "high": []})
            scores[anchor]["none"] += [s for s, _ in plain]
            scores[anchor]["high"] += drifted
    robust = {anchor: round(robustness(s["none"], s["high"]), 3) for anchor, s in scores.items()}
    thresholds = dict.fromkeys(chosen, round(1 - EFFICIENCY_WEIGHT, 3))
    return {"seeds": seeds, "cells": cells, "robustness": robust, "thresholds": thresholds}


def table_markdown(result: dict[str, Any]) -> str:
    return stats.anchor_table_markdown(
        result,
        TASKS,
        caption="each cell is the mean composite / pass rate without drift, then the mean composite with drift high; "
        "robustness = mean with drift high / mean without.",
        cell=lambda c: f"{c['score']:.3f} / {c['passed']:.0%} / {c['drifted']:.3f}",
        extra=("robustness", lambda anchor: f"{result['robustness'][anchor]:.3f}"),
    )


def write(result: dict[str, Any]) -> None:
    stats.calibration_write(
        result,
        engine=ENGINE,
        path=CALIBRATION_PATH,
        readme=README_PATH,
        markers=(TABLE_START, TABLE_END),
        table=table_markdown(result),
        keys=("seeds", "thresholds", "robustness"),
    )


if __name__ == "__main__":
    outcome = calibrate(heldout_seeds=sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SEEDS)
    write(outcome)
    print(table_markdown(outcome))
