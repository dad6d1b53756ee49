"""Anchor calibration for GraphCert tasks: `python -m environments calibrate graphcert` prints the table.

Each anchor plays each task over seeds 0..seeds-1 through the shared runner; a cell holds the mean exact match
with its 95% confidence half-width, then the mean rubric reward and evidence F1. Exact match is 0 or 1, so the
tasks keep the 0.5 pass threshold without fitting.
"""

from __future__ import annotations

import math
import statistics
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from environments.graphcert.anchors import ANCHOR_NAMES

DEFAULT_SEEDS = 100


def run_cell(task_id: str, anchor: str, seeds: int) -> dict[str, Any]:
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    exact, rubric, f1 = [], [], []
    for seed in range(seeds):
        env = make(task_id, seed)
        components = run_episode(env, make_policy(anchor, env, seed))["header"]["score"]["components"]
        exact.append(components["exact_match"])
        rubric.append(components["rubric"])
        f1.append(components["evidence_f1"])
    half = 1.96 * statistics.stdev(exact) / math.sqrt(seeds) if seeds > 1 else 0.0
    return {
        "task": task_id,
        "anchor": anchor,
        "mean": statistics.mean(exact),
        "ci95": half,
        "rubric": statistics.mean(rubric),
        "evidence_f1": statistics.mean(f1),
    }


def calibrate(*, workers: int = 2, seeds: int = DEFAULT_SEEDS, tasks: list[str] | None = None, split: str = "dev") -> dict[str, Any]:
    """{"seeds": n, "tasks": {task id: {anchor: cell}}} for the given tasks (default: every task of `split`)."""
    from environments.registry import list_tasks

    task_ids = tasks if tasks is not None else [t.id for t in list_tasks("graphcert") if t.split == split]
    jobs = [(task_id, anchor) for task_id in task_ids for anchor in ANCHOR_NAMES]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        cells = list(pool.map(run_cell, [j[0] for j in jobs], [j[1] for j in jobs], [seeds] * len(jobs)))
    result: dict[str, Any] = {"seeds": seeds, "tasks": {}}
    for cell in cells:
        result["tasks"].setdefault(cell["task"], {})[cell["anchor"]] = cell
    return result


def table_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Exact match mean ± 95% CI over seeds 0-{result['seeds'] - 1}; rubric reward / evidence F1 in brackets.",
        "| task | " + " | ".join(ANCHOR_NAMES) + " |",
        "| --- |" + " --- |" * len(ANCHOR_NAMES),
    ]
    for task_id, cells in result["tasks"].items():
        row = [f"{c['mean']:.2f} ± {c['ci95']:.2f} ({c['rubric']:.2f} / {c['evidence_f1']:.2f})" for c in (cells[a] for a in ANCHOR_NAMES)]
        lines.append(f"| {task_id} | " + " | ".join(row) + " |")
    return "\n".join(lines)
