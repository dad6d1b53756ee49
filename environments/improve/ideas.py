"""Idea critics and the budgeted selector: screen proposals before paying to verify them.

    scores = heuristic_critic(configs)                  # a scripted prior: no access to the data
    scores = OracleCritic(env)(configs)                 # reads the hidden validation score (tests, upper bound)
    chosen = select(ids, scores, budget=4.0, cost=1.0)  # the most promising candidates the budget can verify

An idea critic maps candidate configs (their JSON form, as `propose` returns them) to scores, higher meaning
more promising; it never spends verification budget. The critic-guided anchor (anchors.ScreenedSearch)
records its critic's turn as a step of role "critic" whose message holds the scores.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

from environments.improve.model import Config, evaluate

IdeaCritic = Callable[[Sequence[dict[str, Any]]], list[float]]


def heuristic_critic(configs: Sequence[dict[str, Any]]) -> list[float]:
    """A prior any practitioner would write down without seeing the data: gradient descent needs enough total
    step size (lr x epochs of 10 or more), a heavy penalty shrinks a useful model, and squared features rarely
    hurt a linear model that is not overfitting. Nothing else is known, so nothing else is scored."""
    out = []
    for c in configs:
        progress = math.log10(max(c["lr"] * c["epochs"], 1e-6))
        score = (
            -max(0.0, 1.0 - progress) - (0.5 if c["reg"] >= 1.0 else 0.2 if c["reg"] >= 0.1 else 0.0) + (0.2 if c["degree"] == 2 else 0.0)
        )
        out.append(round(score, 6))
    return out


class OracleCritic:
    """Scores a candidate by its true validation score: what a perfect critic would say (for tests and as a ceiling)."""

    def __init__(self, env: Any) -> None:
        self.data = env.data

    def __call__(self, configs: Sequence[dict[str, Any]]) -> list[float]:
        return [evaluate(self.data, Config(c["lr"], c["reg"], c["epochs"], c["degree"], tuple(c["features"])), "val") for c in configs]


def affordable(budget: float, cost: float) -> int:
    """How many verifications `budget` pays for at `cost` each."""
    assert cost > 0 and budget >= 0, f"cost must be > 0 and budget >= 0, got cost={cost}, budget={budget}"
    return int(math.floor(budget / cost + 1e-9))


def select(candidates: Sequence[str], scores: Sequence[float], budget: float, cost: float = 1.0) -> list[str]:
    """The highest-scoring candidates whose verification the budget pays for, best first (ties: proposal order)."""
    assert len(candidates) == len(scores), f"{len(candidates)} candidates but {len(scores)} scores"
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
    return [candidates[i] for i in order[: affordable(budget, cost)]]


def random_select(candidates: Sequence[str], budget: float, cost: float, rng: random.Random) -> list[str]:
    """The baseline selector: as many candidates as the budget pays for, drawn at random."""
    return rng.sample(list(candidates), min(len(candidates), affordable(budget, cost)))
