"""The difficulty knobs of a phantom task, read from TaskSpec.spec and validated loudly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from environments.budgeted import knobs_from_spec


@dataclass(frozen=True)
class PhantomConfig:
    hops: tuple[int, ...] = (2,)
    """Hop counts questions are drawn from (1-4 articles per chain), uniformly."""
    articles: int = 1000
    """Corpus size: entity articles plus gazette articles."""
    distractors: int = 1
    """0-3: at most this many distractor sentences per article; each level adds 5% gazette articles."""
    alias_rate: float = 0.5
    """Chance that an article names a related entity by alias rather than by name."""
    comparison_rate: float = 0.0
    """Chance that a question compares two chains instead of following one."""
    constraint_rate: float = 0.0
    """Chance that the anchor is named only by occupation and a shared surname."""
    max_steps: int = 20
    """Tool calls allowed, errors included; the episode ends with max_steps (score 0) when they run out."""
    reward: str = "em"
    """"em" scores normalised exact match, "f1" token F1 (both are always reported as components)."""
    seeds_per_universe: int = 100
    """Consecutive seeds that share one universe (seed // this picks the universe), so universes are reused."""

    def __post_init__(self) -> None:
        problems = []
        if not self.hops or any(h not in (1, 2, 3, 4) for h in self.hops):
            problems.append(f"hops must be a non-empty list of 1-4, got {self.hops!r}")
        if not 50 <= self.articles <= 100_000:
            problems.append(f"articles must be 50-100000, got {self.articles!r}")
        if self.distractors not in (0, 1, 2, 3):
            problems.append(f"distractors must be 0-3, got {self.distractors!r}")
        for name in ("alias_rate", "comparison_rate", "constraint_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                problems.append(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not 2 <= self.max_steps <= 500:
            problems.append(f"max_steps must be 2-500, got {self.max_steps!r}")
        if self.reward not in ("em", "f1"):
            problems.append(f"reward must be 'em' or 'f1', got {self.reward!r}")
        if self.seeds_per_universe < 1:
            problems.append(f"seeds_per_universe must be at least 1, got {self.seeds_per_universe!r}")
        if problems:
            raise ValueError("bad phantom task spec: " + "; ".join(problems))

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> PhantomConfig:
        return knobs_from_spec(cls, spec, "phantom")
