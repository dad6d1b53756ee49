"""Calibration: every anchor on every period over evaluation seeds, and the pass thresholds that follow.

    python -m environments calibrate optionsdesk                        # seeds 1000-1004; prints the table
    python -m environments.optionsdesk.calibration [SEEDS]               # the same, and rewrites calibration.json
                                                                         # and the README table

A task's pass threshold is the best mean composite of the honest anchors (all but the hindsight oracle) on
that period, and never below 0.51: passing means beating, on average, every scripted desk that does not see
the future. The oracle's row shows how much room there is above that.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from environments import stats

HERE = Path(__file__).parent
CALIBRATION_PATH = HERE / "calibration.json"
README_PATH = HERE / "README.md"
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"
ANCHORS = ("no-trade", "always-straddle", "regime-rule", "learned-selector", "hindsight-oracle")
TASKS = ("train", "validation", "oos")
DEFAULT_SEEDS = "1000-1004"
ENGINE = "1"  # thresholds of another engine version are stale and ignored


def load_thresholds(path: Path = CALIBRATION_PATH) -> dict[str, float]:
    return stats.load_thresholds(path, ENGINE)


def calibrate(*, workers: int = 1, heldout_seeds: str = DEFAULT_SEEDS, tasks: list[str] | None = None) -> dict[str, Any]:
    """{"seeds", "cells": {anchor: {task: {metric: mean}}}, "thresholds": {task: threshold}}. Serial (`workers` is
    accepted for the CLI's sake): an episode takes well under a second, the oracle's a few."""
    from environments.seeds import seeds_parse

    seeds = seeds_parse(heldout_seeds)
    chosen = [t for t in TASKS if tasks is None or t in tasks]
    cells: dict[str, dict[str, dict[str, float]]] = {}
    for anchor in ANCHORS:
        for task in chosen:
            rows = [
                [
                    score["composite"],
                    score["components"]["total_return"],
                    score["components"]["sharpe"],
                    score["components"]["max_drawdown"],
                    score["components"]["turnover"],
                ]
                for score in stats.anchor_scores(f"optionsdesk/{task}", anchor, seeds)
            ]
            mean = np.mean(np.array(rows), axis=0)
            cells.setdefault(anchor, {})[task] = dict(
                zip(("composite", "return", "sharpe", "drawdown", "turnover"), map(float, mean), strict=True)
            )
    thresholds = {task: round(max(0.51, *(cells[a][task]["composite"] for a in ANCHORS if a != "hindsight-oracle")), 3) for task in chosen}
    return {"seeds": seeds, "cells": cells, "thresholds": thresholds}


def table_markdown(result: dict[str, Any]) -> str:
    return stats.anchor_table_markdown(
        result,
        TASKS,
        caption="each cell is the mean over seeds: composite / total return / Sharpe / max drawdown.",
        cell=lambda c: f"{c['composite']:.3f} / {c['return']:+.2%} / {c['sharpe']:.2f} / {c['drawdown']:.2%}",
    )


def write(result: dict[str, Any]) -> None:
    stats.calibration_write(
        result, engine=ENGINE, path=CALIBRATION_PATH, readme=README_PATH, markers=(TABLE_START, TABLE_END), table=table_markdown(result)
    )


if __name__ == "__main__":
    outcome = calibrate(heldout_seeds=sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SEEDS)
    write(outcome)
    print(table_markdown(outcome))
