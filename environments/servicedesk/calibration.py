"""Calibration: each anchor's success rate per user profile and split, over seeds (success is binary per task).

    python -m environments calibrate servicedesk                          # seeds 0-4, every profile, every task
    python -m environments calibrate servicedesk --heldout-seeds 0-9 --tasks roaming-on,pay-bill
    python -m environments.servicedesk.calibration                        # the same, and rewrite the README table

The profiles are read when it runs (users.PROFILES, which the behaviour-pattern profiles extend), so a new profile
appears in the next table without a change here. Every episode is a full conversation with the rule-based user;
the table gives passes/episodes and the rate for each anchor x profile x split.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from environments.policies import make_policy
from environments.records import record_score
from environments.registry import list_tasks, make
from environments.runner import run_episode
from environments.seeds import seeds_parse
from environments.servicedesk.users import PROFILES
from environments.stats import write_between_markers

ANCHORS = ("oracle", "shortcut", "random-valid", "do-nothing")
SPLITS = ("train", "dev", "test")
DEFAULT_SEEDS = "0-4"
README_PATH = Path(__file__).with_name("README.md")
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"


def calibrate(
    *, workers: int = 1, heldout_seeds: str = DEFAULT_SEEDS, tasks: list[str] | None = None, profiles: list[str] | None = None
) -> dict[str, Any]:
    """Run every anchor on every task, seed and profile; {"seeds", "profiles", "cells": {anchor: {profile: {split: [passes, n]}}}}.

    Serial: a conversation takes milliseconds, so the whole grid of one profile runs in seconds (`workers` is
    accepted for the CLI's sake)."""
    seeds = seeds_parse(heldout_seeds)
    chosen = [t for t in list_tasks("servicedesk") if tasks is None or t.key in tasks]
    names = profiles or sorted(PROFILES)
    cells: dict[str, dict[str, dict[str, list[int]]]] = {}
    for anchor in ANCHORS:
        for profile in names:
            for task in chosen:
                for seed in seeds:
                    env = make(task.id, seed=seed, options={"user_profile": profile})
                    record = run_episode(env, make_policy(anchor, env, seed))
                    cell = cells.setdefault(anchor, {}).setdefault(profile, {}).setdefault(task.split, [0, 0])
                    cell[0] += bool(record_score(record)["passed"])
                    cell[1] += 1
    return {"seeds": seeds, "profiles": names, "tasks": len(chosen), "cells": cells}


def table_markdown(result: dict[str, Any]) -> str:
    seeds = result["seeds"]
    lines = [
        f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), {result['tasks']} tasks; each cell: passes/episodes (success rate).",
        "",
        "| anchor | user profile | " + " | ".join(SPLITS) + " |",
        "| --- | --- | " + " | ".join("---:" for _ in SPLITS) + " |",
    ]
    for anchor in ANCHORS:
        for profile in result["profiles"]:
            by_split = result["cells"].get(anchor, {}).get(profile, {})
            row = []
            for split in SPLITS:
                passes, n = by_split.get(split, [0, 0])
                row.append(f"{passes}/{n} ({passes / n:.0%})" if n else "-")
            lines.append(f"| {anchor} | {profile} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_readme(result: dict[str, Any], path: Path = README_PATH) -> None:
    write_between_markers(path, TABLE_START, TABLE_END, table_markdown(result))


if __name__ == "__main__":
    outcome = calibrate(heldout_seeds=sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SEEDS)
    write_readme(outcome)
    print(table_markdown(outcome))
