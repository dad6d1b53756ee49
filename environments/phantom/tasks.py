"""The phantom task grid: difficulty levels x splits. Each split has its own universes (see universe.py)."""

from __future__ import annotations

from typing import Any

from environments.core import TaskSpec
from environments.phantom.names import SPLITS

# level -> (description, knobs). Corpus sizes grow with hops so deeper questions also mean more to search.
LEVELS: dict[str, tuple[str, dict[str, Any]]] = {
    "lookup": (
        "one-article questions, some naming the person only by occupation and surname",
        {"hops": [1], "articles": 500, "distractors": 1, "constraint_rate": 0.3, "max_steps": 10},
    ),
    "bridge": (
        "two-article chains and a few comparisons",
        {"hops": [2], "articles": 1000, "distractors": 1, "comparison_rate": 0.15, "constraint_rate": 0.2, "max_steps": 14},
    ),
    "chain": (
        "three-article chains, more distractors",
        {"hops": [3], "articles": 2000, "distractors": 2, "comparison_rate": 0.15, "constraint_rate": 0.2, "max_steps": 18},
    ),
    "deep": (
        "four-article chains in a 5,000-article corpus",
        {"hops": [4], "articles": 5000, "distractors": 2, "comparison_rate": 0.2, "constraint_rate": 0.25, "max_steps": 24},
    ),
    "mixed": (
        "1-4 hops mixed, comparisons and constraints",
        {"hops": [1, 2, 3, 4], "articles": 2000, "distractors": 2, "comparison_rate": 0.2, "constraint_rate": 0.2, "max_steps": 24},
    ),
    "mixed-f1": (
        "as mixed, scored by token F1 instead of exact match",
        {
            "hops": [1, 2, 3, 4],
            "articles": 2000,
            "distractors": 2,
            "comparison_rate": 0.2,
            "constraint_rate": 0.2,
            "max_steps": 24,
            "reward": "f1",
        },
    ),
    "wide": (
        "2-3 hops in a 10,000-article corpus with heavy distractors",
        {"hops": [2, 3], "articles": 10000, "distractors": 3, "comparison_rate": 0.2, "constraint_rate": 0.3, "max_steps": 20},
    ),
}


def phantom_tasks() -> list[TaskSpec]:
    return level_tasks("phantom", LEVELS, described="Phantom worlds, {description} ({split} universes).")


def level_tasks(env: str, levels: dict[str, tuple[str, dict[str, Any]]], *, described: str) -> list[TaskSpec]:
    """A task per level and split (phantom's and graphcert's grids): key "<level>-<split>", the description
    `described` with the level's {description} and the {split} put in, the level's knobs as its spec."""
    return [
        TaskSpec(
            env=env,
            key=f"{level}-{split}",
            split=split,
            description=described.format(description=description, split=split),
            horizon=f"{knobs['max_steps']} tool calls",
            pass_threshold=0.5,
            version="1",
            spec=dict(knobs),
        )
        for level, (description, knobs) in levels.items()
        for split in SPLITS
    ]
