"""The knobs of a GraphCert task, read from TaskSpec.spec and validated loudly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from environments.budgeted import knobs_from_spec


@dataclass(frozen=True)
class GraphCertConfig:
    hops: tuple[int, ...] = (2,)
    """Hop counts questions are drawn from (1-4 entities per chain), uniformly."""
    articles: int = 1000
    """Size of the Phantom universe the graph is read from (its entity count follows from it)."""
    comparison_rate: float = 0.0
    """Chance that a question compares two chains instead of following one."""
    constraint_rate: float = 0.0
    """Chance that the anchor is named only by occupation and a shared surname."""
    max_steps: int = 16
    """Tool calls allowed, errors included; the episode ends with max_steps (score 0) when they run out."""
    reward: str = "outcome"
    """The composite: "outcome" (exact match only) or "rubric" (answer and cited evidence); both are components."""
    seeds_per_universe: int = 100
    """Consecutive seeds that share one universe (seed // this picks the universe)."""

    def __post_init__(self) -> None:
        problems = []
        if not self.hops or any(h not in (1, 2, 3, 4) for h in self.hops):
            problems.append(f"hops must be a non-empty list of 1-4, got {self.hops!r}")
        if not 50 <= self.articles <= 20_000:
            problems.append(f"articles must be 50-20000, got {self.articles!r}")
        for name in ("comparison_rate", "constraint_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not 2 <= self.max_steps <= 200:
            problems.append(f"max_steps must be 2-200, got {self.max_steps!r}")
        if self.reward not in ("outcome", "rubric"):
            problems.append(f"reward must be 'outcome' or 'rubric', got {self.reward!r}")
        if self.seeds_per_universe < 1:
            problems.append(f"seeds_per_universe must be at least 1, got {self.seeds_per_universe!r}")
        if problems:
            raise ValueError("bad graphcert task spec: " + "; ".join(problems))

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> GraphCertConfig:
        return knobs_from_spec(cls, spec, "graphcert")
