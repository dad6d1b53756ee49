"""Fitting an agent's absolute risk aversion from its choices, with a confidence interval and a consistency score.

    decisions = [Decision(options=(lottery_a, lottery_b), weights=(0.0, 1.0)), ...]   # one-hot: the option chosen
    fit = fit_cara(decisions)     # CaraFit(a=0.0021, low=0.0014, high=0.0029, precision=18.0, consistency=0.93, ...)

The choice model is a logit over certainty equivalents (environments.riskprobe.cara), with the noise measured in
the decision's stake scale S (its largest absolute change), so small and large decisions are equally noisy:
    P(k) = exp(λ CE_a(k) / S) / Σ_j exp(λ CE_a(j) / S)
Both a (per credit) and the precision λ are fitted by maximum likelihood. `weights` may be choice probabilities
rather than one choice (a model's distribution over the options): the likelihood is then the expected one,
Σ_k w_k log P(k), which is maximised where the model's choice rule matches them.

The interval is the profile likelihood one: every a whose profile deviance 2(ℓ̂ - max_λ ℓ(a, λ)) stays below the
χ²(1) quantile. An interval reaching a bound of `A_BOUNDS` is open on that side (`censored`); an agent that always
takes the gamble has no finite upper bound on its risk seeking.

Consistency is the largest share of choices one CARA coefficient explains: the best a's agreement, where a choice
agrees when it is the option with the highest certainty equivalent (expected agreement for weighted choices).
An agent choosing by any fixed a scores 1; one choosing at random, about 1 / (options) plus what luck explains.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from environments.riskprobe.cara import Lottery, certainty_equivalent, check_lottery, stake_scale

A_BOUNDS = (-0.01, 0.02)  # per credit: from risk seeking to strongly averse at these probes' stakes (hundreds of credits)
LOG_PRECISION_BOUNDS = (math.log(0.01), math.log(1000.0))  # a choice rule from near-random to near-deterministic
GRID = 121  # points of the profile over A_BOUNDS; crossings and the maximum are refined between them


@dataclass(frozen=True)
class Decision:
    options: tuple[Lottery, ...]
    weights: tuple[float, ...]  # per option: 1 for the one chosen, or choice probabilities summing to 1

    def __post_init__(self) -> None:
        assert len(self.options) == len(self.weights) >= 2, f"a decision needs >= 2 options and one weight each, got {self.weights}"
        assert all(w >= 0 for w in self.weights) and abs(sum(self.weights) - 1) < 1e-6, f"weights {self.weights} must sum to 1"
        for lottery in self.options:
            check_lottery(lottery)


@dataclass(frozen=True)
class CaraFit:
    a: float  # maximum-likelihood absolute risk aversion, per credit
    low: float  # the profile-likelihood interval at `level`
    high: float
    precision: float  # λ at the maximum
    log_likelihood: float
    decisions: int
    consistency: float  # the best single a's agreement with the choices
    agreement: float  # the fitted a's agreement
    level: float = 0.95

    @property
    def censored(self) -> tuple[bool, bool]:
        """Whether the interval reaches the lower / upper bound of A_BOUNDS (open on that side)."""
        return (self.low <= A_BOUNDS[0] + 1e-12, self.high >= A_BOUNDS[1] - 1e-12)


def logit_choice(a: float, precision: float, options: Sequence[Lottery]) -> list[float]:
    """P(k) of the choice rule for one decision (the synthetic agents' and the teacher's rule)."""
    scale = stake_scale(list(options))
    utilities = np.array([precision * certainty_equivalent(a, lottery) / scale for lottery in options])
    return [float(p) for p in special.softmax(utilities)]


class _Arrays:
    """The decisions as padded arrays: probabilities and changes (N, K, M), option mask (N, K), weights (N, K), scale (N,)."""

    def __init__(self, decisions: Sequence[Decision]) -> None:
        n, k = len(decisions), max(len(d.options) for d in decisions)
        m = max(len(lottery) for d in decisions for lottery in d.options)
        self.p, self.x = np.zeros((n, k, m)), np.zeros((n, k, m))
        self.mask, self.w = np.zeros((n, k), dtype=bool), np.zeros((n, k))
        self.scale = np.array([stake_scale(list(d.options)) for d in decisions])
        for i, d in enumerate(decisions):
            for j, lottery in enumerate(d.options):
                self.mask[i, j], self.w[i, j] = True, d.weights[j]
                for t, (p, x) in enumerate(lottery):
                    self.p[i, j, t], self.x[i, j, t] = p, x
        self.p[~self.mask] = 1.0  # padding options: a sure 0, masked out of every softmax below
        with np.errstate(divide="ignore"):
            self.logp = np.log(self.p)  # -inf on padding outcomes, which then weigh nothing

    def ce(self, a: float) -> np.ndarray:
        """CE_a of every option, (N, K)."""
        if abs(a) < 1e-9:
            return (self.p * self.x).sum(-1)
        t = self.logp - a * self.x  # (N, K, M); numpy by hand: scipy's logsumexp costs ~100x more at these sizes
        top = t.max(-1)
        return -(top + np.log(np.exp(t - top[..., None]).sum(-1))) / a

    def log_likelihood(self, ce: np.ndarray, log_precision: np.ndarray) -> np.ndarray:
        """ℓ at one a (its CE, (N, K)) for each log λ of a vector (L,) at once -> (L,)."""
        z = np.exp(log_precision)[:, None, None] * (ce / self.scale[:, None])[None]  # (L, N, K)
        z = np.where(self.mask[None], z, -np.inf)
        top = z.max(-1, keepdims=True)
        logp = z - top - np.log(np.exp(z - top).sum(-1, keepdims=True))
        return np.where(self.mask[None], self.w[None] * np.where(self.mask[None], logp, 0.0), 0.0).sum((-1, -2))

    def profile(self, a: float) -> tuple[float, float]:
        """(max over λ of ℓ(a, λ), the arg max log λ): the best of a coarse grid, refined between its neighbours."""
        ce = self.ce(a)
        values = self.log_likelihood(ce, _LOG_PRECISIONS)
        i = int(values.argmax())
        bounds = (_LOG_PRECISIONS[max(i - 1, 0)], _LOG_PRECISIONS[min(i + 1, len(_LOG_PRECISIONS) - 1)])
        best = optimize.minimize_scalar(lambda s: -self.log_likelihood(ce, np.array([s]))[0], bounds=bounds, method="bounded")
        if -best.fun < values[i]:
            return float(values[i]), float(_LOG_PRECISIONS[i])
        return -float(best.fun), float(best.x)

    def agreement(self, a: float) -> float:
        ce = np.where(self.mask, self.ce(a), -np.inf)
        best = ce.argmax(-1)
        return float(self.w[np.arange(len(best)), best].mean())


_LOG_PRECISIONS = np.linspace(*LOG_PRECISION_BOUNDS, 41)


def fit_cara(decisions: Sequence[Decision], *, level: float = 0.95) -> CaraFit:
    """Maximum-likelihood a and λ, the profile-likelihood interval for a, and the consistency (module docstring)."""
    assert decisions, "fitting needs at least one decision"
    data = _Arrays(decisions)
    grid = np.linspace(*A_BOUNDS, GRID)
    profile = np.array([data.profile(float(a))[0] for a in grid])
    i = int(profile.argmax())
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, GRID - 1)]
    refined = optimize.minimize_scalar(lambda a: -data.profile(a)[0], bounds=(lo, hi), method="bounded")
    a_hat, ll_hat = (float(refined.x), -float(refined.fun)) if -refined.fun >= profile[i] else (float(grid[i]), float(profile[i]))
    cut = ll_hat - stats.chi2.ppf(level, df=1) / 2  # the profile stays above this inside the interval

    def crossing(outside: int, inside: int) -> float:
        a0, a1 = float(grid[outside]), float(grid[inside])
        return float(optimize.brentq(lambda a: data.profile(a)[0] - cut, a0, a1, xtol=1e-7))

    below = np.nonzero(profile[:i] < cut)[0]
    above = np.nonzero(profile[i + 1 :] < cut)[0] + i + 1
    low = crossing(int(below[-1]), int(below[-1]) + 1) if below.size else A_BOUNDS[0]
    high = crossing(int(above[0]), int(above[0]) - 1) if above.size else A_BOUNDS[1]
    low, high = min(low, a_hat), max(high, a_hat)
    consistency = max(data.agreement(float(a)) for a in grid)
    return CaraFit(
        a=a_hat,
        low=low,
        high=high,
        precision=math.exp(data.profile(a_hat)[1]),
        log_likelihood=ll_hat,
        decisions=len(decisions),
        consistency=consistency,
        agreement=data.agreement(a_hat),
        level=level,
    )
