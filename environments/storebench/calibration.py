"""Calibration: run every anchor on every scenario and public seed, derive per-scenario references and
pass thresholds, and write them to calibration.json and the README table.

    profit_floor      best normalised profit of do-nothing and random-valid, plus 0.02 (the profit component's 0)
    profit_reference  mean normalised profit of the oracle (the profit component's 1)
    pass_threshold    max(best do-nothing/random cell + 0.05, 0.8 x smart-triage's mean composite)

The profit component depends on the references, so composites are recomputed from each run's raw profit
and quality components after the references are known (scoring.composite_from, the same formula).
"""

from __future__ import annotations

import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from environments.registry import list_tasks, make
from environments.storebench.scoring import CALIBRATION_PATH, composite_from, profit_component

ANCHORS = ("do-nothing", "random-valid", "naive-restock", "smart-triage", "oracle")
README_PATH = Path(__file__).with_name("README.md")
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"


def run_cell(task_id: str, seed: int, anchor: str) -> dict[str, Any]:
    """One anchor on one task and seed: the raw results calibration needs."""
    from environments.runner import make_policy, run_episode

    env = make(task_id, seed=seed)
    record = run_episode(env, make_policy(anchor, env, seed))
    score = record["header"]["score"]
    return {
        "task": task_id, "seed": seed, "anchor": anchor, "termination_reason": record["header"]["termination_reason"],
        "profit": score["details"]["profit_normalised"], "profit_dollars": score["details"]["profit_dollars"], "components": score["components"], "steps": len(record["steps"]) - 1,
    }  # fmt: skip


def calibrate(*, workers: int = 2, write: bool = True, tasks: list[str] | None = None) -> dict[str, Any]:
    specs = [t for t in list_tasks("storebench") if tasks is None or t.id in tasks]
    jobs = [(t.id, seed, anchor) for t in specs for seed in t.public_seeds for anchor in ANCHORS]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        cells = list(pool.map(run_cell, *zip(*jobs, strict=True)))
    result: dict[str, Any] = {}
    for task in specs:
        mine = [c for c in cells if c["task"] == task.id]
        # The floor sits just above the best idle or random store, so doing nothing scores 0 on any seed.
        floor = max(c["profit"] for c in mine if c["anchor"] in ("do-nothing", "random-valid")) + 0.02
        reference = statistics.mean(c["profit"] for c in mine if c["anchor"] == "oracle")
        reference = max(reference, floor + 0.05)  # a degenerate scenario must not divide by ~0
        scores: dict[str, list[float]] = {a: [] for a in ANCHORS}
        for c in mine:
            components = {**c["components"], "profit": round(profit_component(c["profit"], floor, reference), 4)}
            finished = c["termination_reason"] == "horizon_reached"
            scores[c["anchor"]].append(composite_from(components) if finished else 0.0)
        bad = max(scores["do-nothing"] + scores["random-valid"])
        threshold = round(max(bad + 0.05, 0.8 * statistics.mean(scores["smart-triage"])), 3)
        result[task.key] = {
            "scenario_version": task.version, "split": task.split, "horizon": task.horizon, "profit_floor": round(floor, 6),
            "profit_reference": round(reference, 6), "pass_threshold": threshold, "composites": scores,
            "passes": {a: sum(s >= threshold for s in scores[a]) for a in ANCHORS},
        }  # fmt: skip
    if write:
        existing = json.loads(CALIBRATION_PATH.read_text()).get("scenarios", {}) if CALIBRATION_PATH.exists() else {}
        existing.update(result)
        CALIBRATION_PATH.write_text(
            json.dumps(
                {"generated_by": "python -m environments calibrate storebench", "anchors": list(ANCHORS), "scenarios": existing}, indent=1
            )
            + "\n"
        )
        write_readme_table(existing)
    return result


def table_markdown(scenarios: dict[str, Any]) -> str:
    head = "| scenario | split | horizon | threshold | " + " | ".join(f"{a} (mean, passes/3)" for a in ANCHORS) + " |"
    lines = [head, "|" + " --- |" * (4 + len(ANCHORS))]
    for key in sorted(scenarios, key=lambda k: (scenarios[k]["split"], k)):
        s = scenarios[key]
        cells = [f"{statistics.mean(s['composites'][a]):.3f}, {s['passes'][a]}/{len(s['composites'][a])}" for a in ANCHORS]
        lines.append(f"| {key} | {s['split']} | {s['horizon']} | {s['pass_threshold']:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme_table(scenarios: dict[str, Any]) -> None:
    text = README_PATH.read_text() if README_PATH.exists() else f"{TABLE_START}\n{TABLE_END}\n"
    assert TABLE_START in text and TABLE_END in text, "README.md lost its calibration markers"
    before, rest = text.split(TABLE_START, 1)
    _, after = rest.split(TABLE_END, 1)
    README_PATH.write_text(f"{before}{TABLE_START}\n{table_markdown(scenarios)}\n{TABLE_END}{after}")
