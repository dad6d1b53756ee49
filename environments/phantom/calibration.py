"""Anchor calibration for phantom tasks: `python -m environments calibrate phantom` prints the table.

Each anchor plays each task over seeds 0..seeds-1 through the shared runner; a cell holds the mean composite,
its 95% confidence half-width and the mean evidence recall. Pass thresholds stay at the tasks' 0.5: exact
match is 0 or 1, so no per-task threshold fitting is needed.
"""

from __future__ import annotations

import statistics
from typing import Any

from environments.phantom.anchors import ANCHOR_NAMES
from environments.stats import anchor_grid, anchor_scores, grid_table_markdown, normal_ci95

DEFAULT_SEEDS = 100


def run_cell(task_id: str, anchor: str, seeds: int) -> dict[str, Any]:
    scores = anchor_scores(task_id, anchor, seeds)
    composites = [s["composite"] for s in scores]
    return {
        "task": task_id,
        "anchor": anchor,
        "mean": statistics.mean(composites),
        "ci95": normal_ci95(composites),
        "evidence_recall": statistics.mean(s["components"]["evidence_recall"] for s in scores),
    }


def calibrate(*, workers: int = 2, seeds: int = DEFAULT_SEEDS, tasks: list[str] | None = None, split: str = "dev") -> dict[str, Any]:
    """{"seeds": n, "tasks": {task id: {anchor: cell}}} for the given tasks (default: every task of `split`)."""
    return anchor_grid("phantom", ANCHOR_NAMES, run_cell, workers=workers, seeds=seeds, tasks=tasks, split=split)


def table_markdown(result: dict[str, Any]) -> str:
    return grid_table_markdown(
        result,
        ANCHOR_NAMES,
        caption=f"Composite mean ± 95% CI over seeds 0-{result['seeds'] - 1} (evidence recall in brackets).",
        cell=lambda c: f"{c['mean']:.2f} ± {c['ci95']:.2f} ({c['evidence_recall']:.2f})",
    )
