"""The GraphCert task grid: levels x splits. Each split reads its own Phantom universes (no shared names)."""

from __future__ import annotations

from typing import Any

from environments.core import TaskSpec
from environments.phantom.tasks import level_tasks

# level -> (description, knobs). A hop is one tool call here (neighbours), so budgets are tighter than phantom's.
LEVELS: dict[str, tuple[str, dict[str, Any]]] = {
    "lookup": (
        "one-entity questions, some naming the person only by occupation and surname",
        {"hops": [1], "articles": 500, "constraint_rate": 0.3, "max_steps": 8},
    ),
    "bridge": (
        "two-entity chains and a few comparisons",
        {"hops": [2], "articles": 1000, "comparison_rate": 0.15, "constraint_rate": 0.2, "max_steps": 12},
    ),
    "chain": (
        "three-entity chains and comparisons",
        {"hops": [3], "articles": 2000, "comparison_rate": 0.15, "constraint_rate": 0.2, "max_steps": 16},
    ),
    "mixed": (
        "1-3 hops mixed, comparisons and constraints",
        {"hops": [1, 2, 3], "articles": 2000, "comparison_rate": 0.2, "constraint_rate": 0.2, "max_steps": 16},
    ),
    "mixed-rubric": (
        "as mixed, scored by the evidence rubric instead of exact match",
        {"hops": [1, 2, 3], "articles": 2000, "comparison_rate": 0.2, "constraint_rate": 0.2, "max_steps": 16, "reward": "rubric"},
    ),
}


def graphcert_tasks() -> list[TaskSpec]:
    return level_tasks("graphcert", LEVELS, described="Phantom knowledge graph with certified evidence, {description} ({split} universes).")
