"""Anchor calibration for phantom tasks: `python -m environments calibrate phantom` prints the table.

Each anchor plays each task over seeds 0..seeds-1 through the shared runner; a cell holds the mean composite,
its 95% confidence half-width and the mean evidence recall. Pass thresholds stay at the tasks' 0.5: exact
match is 0 or 1, so no per-task threshold fitting is needed.
"""

from __future__ import annotations

import math
import statistics
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from environments.phantom.anchors import ANCHOR_NAMES

DEFAULT_SEEDS = 100


def run_cell(task_id: str, anchor: str, seeds: int) -> dict[str, Any]:
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    composites, recalls = [], []
    for seed in range(seeds):
        env = make(task_id, seed)
        score = run_episode(env, make_policy(anchor, env, seed))["header"]["score"]
        composites.append(score["composite"])
        recalls.append(score["components"]["evidence_recall"])
    half = 1.96 * statistics.stdev(composites) / math.sqrt(seeds) if seeds > 1 else 0.0
    return {
        "task": task_id,
        "anchor": anchor,
        "mean": statistics.mean(composites),
        "ci95": half,
        "evidence_recall": statistics.mean(recalls),
    }


def calibrate(*, workers: int = 2, seeds: int = DEFAULT_SEEDS, tasks: list[str] | None = None, split: str = "dev") -> dict[str, Any]:
    """{task id: {anchor: cell}} for the given tasks (default: every task of `split`)."""
    from environments.registry import list_tasks

    task_ids = tasks if tasks is not None else [t.id for t in list_tasks("phantom") if t.split == split]
    jobs = [(task_id, anchor) for task_id in task_ids for anchor in ANCHOR_NAMES]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        cells = list(pool.map(run_cell, [j[0] for j in jobs], [j[1] for j in jobs], [seeds] * len(jobs)))
    result: dict[str, Any] = {"seeds": seeds, "tasks": {}}
    for cell in cells:
        result["tasks"].setdefault(cell["task"], {})[cell["anchor"]] = cell
    return result


def table_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Composite mean ± 95% CI over seeds 0-{result['seeds'] - 1} (evidence recall in brackets).",
        "| task | " + " | ".join(ANCHOR_NAMES) + " |",
        "| --- |" + " --- |" * len(ANCHOR_NAMES),
    ]
    for task_id, cells in result["tasks"].items():
        row = [f"{cells[a]['mean']:.2f} ± {cells[a]['ci95']:.2f} ({cells[a]['evidence_recall']:.2f})" for a in ANCHOR_NAMES]
        lines.append(f"| {task_id} | " + " | ".join(row) + " |")
    return "\n".join(lines)
