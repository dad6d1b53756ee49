"""Anchor calibration for GraphCert tasks: `python -m environments calibrate graphcert` prints the table.

Each anchor plays each task over seeds 0..seeds-1 through the shared runner; a cell holds the mean exact match
with its 95% confidence half-width, then the mean rubric reward and evidence F1. Exact match is 0 or 1, so the
tasks keep the 0.5 pass threshold without fitting.
"""

from __future__ import annotations

import statistics
from typing import Any

from environments.graphcert.anchors import ANCHOR_NAMES
from environments.stats import anchor_grid, anchor_scores, grid_table_markdown, normal_ci95

DEFAULT_SEEDS = 100


def run_cell(task_id: str, anchor: str, seeds: int) -> dict[str, Any]:
    components = [s["components"] for s in anchor_scores(task_id, anchor, seeds)]
    exact = [c["exact_match"] for c in components]
    return {
        "task": task_id,
        "anchor": anchor,
        "mean": statistics.mean(exact),
        "ci95": normal_ci95(exact),
        "rubric": statistics.mean(c["rubric"] for c in components),
        "evidence_f1": statistics.mean(c["evidence_f1"] for c in components),
    }


def calibrate(*, workers: int = 2, seeds: int = DEFAULT_SEEDS, tasks: list[str] | None = None, split: str = "dev") -> dict[str, Any]:
    """{"seeds": n, "tasks": {task id: {anchor: cell}}} for the given tasks (default: every task of `split`)."""
    return anchor_grid("graphcert", ANCHOR_NAMES, run_cell, workers=workers, seeds=seeds, tasks=tasks, split=split)


def table_markdown(result: dict[str, Any]) -> str:
    return grid_table_markdown(
        result,
        ANCHOR_NAMES,
        caption=f"Exact match mean ± 95% CI over seeds 0-{result['seeds'] - 1}; rubric reward / evidence F1 in brackets.",
        cell=lambda c: f"{c['mean']:.2f} ± {c['ci95']:.2f} ({c['rubric']:.2f} / {c['evidence_f1']:.2f})",
    )
