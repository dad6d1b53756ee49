"""Small statistics shared by the environments' calibrations (pure Python).

ci95([0.61, 0.70, 0.66])     # half-width of the 95% interval of the mean, Student's t
wilson(3, 4)                 # the 95% Wilson interval of a rate: (0.301, 0.954), inside [0, 1] at any n
anchor_grid("phantom", ANCHOR_NAMES, run_cell, workers=2, seeds=100, tasks=None, split="dev")   # anchors x tasks
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from environments.records import ScoreDict, record_score

# Student's t 97.5% quantiles by degrees of freedom: ten seeds are too few for the normal 1.96.
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    14: 2.145,
    19: 2.093,
    29: 2.045,
    39: 2.023,
    79: 1.99,
}


def ci95(values: Sequence[float]) -> float:
    """Half-width of the 95% confidence interval of the mean (Student's t); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    # The tabled quantile at or below the degrees of freedom: never narrower than the exact interval.
    t = _T975[max(k for k in _T975 if k <= len(values) - 1)]
    return t * statistics.stdev(values) / math.sqrt(len(values))


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate: inside [0, 1] at any n, unlike mean ± t·s/√n; (0, 1) when n is 0."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def write_between_markers(path: Path, start: str, end: str, body: str) -> None:
    """Replace what lies between the `start` and `end` markers of the file at `path` with `body` (a calibration's
    table in its README); the markers must be there."""
    text = path.read_text(encoding="utf-8")
    head, found_start, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    assert found_start and found_end, f"{path} has no {start} ... {end} markers"
    path.write_text(f"{head}{start}\n{body}\n{end}{tail}", encoding="utf-8")


def anchor_table_markdown(
    result: dict[str, Any],
    tasks: Sequence[str],
    *,
    caption: str,
    cell: Callable[[dict[str, Any]], str],
    extra: tuple[str, Callable[[str], str]] | None = None,
) -> str:
    """A calibration's README table: a row per anchor of result["cells"] ({anchor: {task: cell}}) with a column per
    task (drawn by `cell`, "-" where the anchor has none), an optional last column (`extra`: its heading, and its value
    for an anchor), then the pass thresholds. `caption` follows "Seeds 1000-1004 (5); " and says what a cell is."""
    seeds = result["seeds"]
    lines = [
        f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}); {caption}",
        "",
        "| anchor | " + " | ".join(tasks) + (f" | {extra[0]} |" if extra else " |"),
        "| --- | " + " | ".join("---:" for _ in tasks) + (" | ---: |" if extra else " |"),
    ]
    for anchor, by_task in result["cells"].items():
        row = " | ".join(cell(c) if (c := by_task.get(t)) else "-" for t in tasks)
        lines.append(f"| {anchor} | {row}" + (f" | {extra[1](anchor)} |" if extra else " |"))
    thresholds = " | ".join(f"{result['thresholds'].get(t, '-')}" for t in tasks)
    lines.append(f"| **pass threshold** | {thresholds}" + (" | |" if extra else " |"))  # no threshold in the extra column
    return "\n".join(lines)


def grid_table_markdown(result: dict[str, Any], anchors: Sequence[str], *, caption: str, cell: Callable[[dict[str, Any]], str]) -> str:
    """An anchor_grid's README table: `caption`, then a row per task of result["tasks"] ({task: {anchor: cell}}) with
    a column per anchor, each cell drawn by `cell`."""
    lines = [caption, "| task | " + " | ".join(anchors) + " |", "| --- |" + " --- |" * len(anchors)]
    for task_id, cells in result["tasks"].items():
        lines.append(f"| {task_id} | " + " | ".join(cell(cells[a]) for a in anchors) + " |")
    return "\n".join(lines)


def calibration_write(
    result: dict[str, Any],
    *,
    engine: str,
    path: Path,
    readme: Path,
    markers: tuple[str, str],
    table: str,
    keys: Sequence[str] = ("seeds", "thresholds"),
) -> None:
    """Save a calibration (its engine version and `keys` of `result`) to `path`, and its table into `readme` between
    the `markers`."""
    path.write_text(json.dumps({"engine": engine, **{key: result[key] for key in keys}}, indent=1) + "\n")
    write_between_markers(readme, *markers, table)


def normal_ci95(values: Sequence[float]) -> float:
    """Half-width of the 95% interval of the mean with the normal 1.96, for grids of 100 seeds and more (where
    Student's t is within 2% of it); 0 for fewer than two values."""
    return 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def anchor_scores(task_id: str, anchor: str, seeds: int | Sequence[int]) -> list[ScoreDict]:
    """The score (header_score(header)) of `anchor` on `task_id` for each seed of `seeds` (a number n: seeds 0..n-1),
    through the shared runner."""
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    scores = []
    for seed in range(seeds) if isinstance(seeds, int) else seeds:
        env = make(task_id, seed)
        scores.append(record_score(run_episode(env, make_policy(anchor, env, seed))))
    return scores


def anchor_grid(
    env: str,
    anchors: Sequence[str],
    run_cell: Callable[[str, str, int], dict[str, Any]],
    *,
    workers: int,
    seeds: int,
    tasks: list[str] | None,
    split: str,
) -> dict[str, Any]:
    """{"seeds": n, "tasks": {task id: {anchor: cell}}}: `run_cell(task id, anchor, seeds)` (a module-level
    function, so worker processes can import it) for every anchor on the given tasks (default: every task of
    `split`), cells spread over `workers` processes."""
    from environments.registry import list_tasks

    task_ids = tasks if tasks is not None else [t.id for t in list_tasks(env) if t.split == split]
    jobs = [(task_id, anchor) for task_id in task_ids for anchor in anchors]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        cells = list(pool.map(run_cell, [j[0] for j in jobs], [j[1] for j in jobs], [seeds] * len(jobs)))
    result: dict[str, Any] = {"seeds": seeds, "tasks": {}}
    for cell in cells:
        result["tasks"].setdefault(cell["task"], {})[cell["anchor"]] = cell
    return result


def load_thresholds(path: Path, engine: str) -> dict[str, float]:
    """A calibration.json's pass thresholds by task key: {} when the file is absent or was written by another engine
    version (its thresholds are stale; the tasks keep their defaults)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: float(v) for k, v in data.get("thresholds", {}).items()} if data.get("engine") == engine else {}
