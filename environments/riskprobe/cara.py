"""Constant absolute risk aversion (CARA): utility and certainty equivalents of small lotteries.

    u(x) = (1 - exp(-a x)) / a          # a > 0 averse, a = 0 neutral (u(x) = x), a < 0 seeking; x in credits
    ce(a, ((0.5, 100.0), (0.5, 0.0)))   # the sure amount as good as a 50-50 chance of 100 credits: 50 at a = 0

A lottery is a tuple of (probability, change in credits) pairs. Under CARA the certainty equivalent of a change
does not depend on the resources the agent already holds (no wealth effect), so probes state outcomes as changes:
    CE_a(L) = -(1/a) log E[exp(-a X)]   (a != 0),   E[X]   (a = 0).
It falls as a rises for any lottery with more than one outcome, which is what makes `a` identifiable from choices.
"""

from __future__ import annotations

import math

Lottery = tuple[tuple[float, float], ...]  # ((probability, change in credits), ...), probabilities summing to 1

NEUTRAL = 1e-9  # |a| below this is risk neutrality: the closed form's 1/a would only add rounding error


def check_lottery(lottery: Lottery) -> None:
    assert lottery, "a lottery needs at least one outcome"
    assert all(p >= 0 for p, _ in lottery), f"negative probability in {lottery}"
    assert abs(sum(p for p, _ in lottery) - 1.0) < 1e-9, f"probabilities of {lottery} sum to {sum(p for p, _ in lottery)}, not 1"


def utility(a: float, x: float) -> float:
    """u(x) = (1 - exp(-a x)) / a, and x itself at a = 0."""
    return x if abs(a) < NEUTRAL else -math.expm1(-a * x) / a


def expected_value(lottery: Lottery) -> float:
    return sum(p * x for p, x in lottery)


def certainty_equivalent(a: float, lottery: Lottery) -> float:
    """CE_a(L) = -(1/a) log Σ p exp(-a x), computed as a log-sum-exp so large stakes do not overflow."""
    check_lottery(lottery)
    if abs(a) < NEUTRAL:
        return expected_value(lottery)
    terms = [math.log(p) - a * x for p, x in lottery if p > 0]
    top = max(terms)
    return -(top + math.log(sum(math.exp(t - top) for t in terms))) / a


def stake_scale(lotteries: list[Lottery]) -> float:
    """The largest absolute change any option of a decision can bring: the unit its choice noise is measured in, so
    a choice over hundreds of credits and one over thousands are equally hard for the logit choice rule."""
    return max(abs(x) for lottery in lotteries for _, x in lottery) or 1.0
