"""Calibration: every anchor on every task over evaluation seeds, and the pass thresholds that follow.

    python -m environments calibrate workdesk                  # seeds 1000-1004; prints the table
    python -m environments.workdesk.calibration [SEEDS]         # the same, and rewrites calibration.json and the README table

A task's threshold is halfway between the best honest anchor (shallow reader, do-nothing) and the oracle's
grade, and never below 0.8: passing means a deliverable close to the oracle's, which every critical item and a
full audit are required for anyway.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from environments import stats

HERE = Path(__file__).parent
CALIBRATION_PATH = HERE / "calibration.json"
README_PATH = HERE / "README.md"
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"
ANCHORS = ("do-nothing", "shallow-reader", "oracle")
TASKS = ("analyst", "accountant", "hr", "operations", "support-lead", "quarter-close")
DEFAULT_SEEDS = "1000-1004"
ENGINE = "1"  # thresholds of another engine version are stale and ignored


def load_thresholds(path: Path = CALIBRATION_PATH) -> dict[str, float]:
    return stats.load_thresholds(path, ENGINE)


def calibrate(*, workers: int = 1, heldout_seeds: str = DEFAULT_SEEDS, tasks: list[str] | None = None) -> dict[str, Any]:
    """{"seeds", "cells": {anchor: {task: {"score", "passed"}}}, "thresholds"}. Serial: an episode takes milliseconds."""
    from environments.seeds import seeds_parse

    seeds = seeds_parse(heldout_seeds)
    chosen = [t for t in TASKS if tasks is None or t in tasks]
    cells: dict[str, dict[str, dict[str, float]]] = {}
    for anchor in ANCHORS:
        for task in chosen:
            scores = [(score["composite"], float(score["passed"])) for score in stats.anchor_scores(f"workdesk/{task}", anchor, seeds)]
            cells.setdefault(anchor, {})[task] = {
                "score": sum(s for s, _ in scores) / len(scores),
                "passed": sum(p for _, p in scores) / len(scores),
            }
    thresholds = {}
    for task in chosen:
        honest = max(cells[a][task]["score"] for a in ANCHORS if a != "oracle")
        thresholds[task] = round(max(0.8, (honest + cells["oracle"][task]["score"]) / 2), 3)
    return {"seeds": seeds, "cells": cells, "thresholds": thresholds}


def table_markdown(result: dict[str, Any]) -> str:
    return stats.anchor_table_markdown(
        result, TASKS, caption="each cell is the mean grade / pass rate over seeds.", cell=lambda c: f"{c['score']:.3f} / {c['passed']:.0%}"
    )


def write(result: dict[str, Any]) -> None:
    stats.calibration_write(
        result, engine=ENGINE, path=CALIBRATION_PATH, readme=README_PATH, markers=(TABLE_START, TABLE_END), table=table_markdown(result)
    )


if __name__ == "__main__":
    outcome = calibrate(heldout_seeds=sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SEEDS)
    write(outcome)
    print(table_markdown(outcome))
