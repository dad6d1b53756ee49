"""Scoring an options-desk episode from its end-of-day equity curve.

    metrics(equity=[1e6, 1.01e6, 0.99e6], traded=2e5)   # total_return, sharpe, max_drawdown, turnover
    composite(metrics)                                    # in [0, 1]; doing nothing scores exactly 0.5

Definitions (documented in README.md too):
- total return: last equity / first - 1, the last equity being what liquidating everything fetched.
- Sharpe ratio: the mean of daily simple returns over their sample standard deviation (ddof=1), times
  sqrt(252); zero risk-free rate; 0 when there are fewer than two returns or they never vary.
- maximum drawdown: the largest fall from a running peak, as a fraction of that peak.
- turnover: premium and stock notional traded, over the starting capital.
The composite rewards risk-adjusted and absolute return and charges drawdown; turnover is reported but not
charged separately, since spreads and fees already charge it in the return.
"""

from __future__ import annotations

import math

import numpy as np

from environments.optionsdesk.pricing import YEAR_DAYS


def sharpe_ratio(equity: list[float]) -> float:
    curve = np.asarray(equity, dtype=float)
    if len(curve) < 3:
        return 0.0
    returns = curve[1:] / curve[:-1] - 1.0
    sd = float(returns.std(ddof=1))
    return 0.0 if sd < 1e-12 else float(returns.mean() / sd * math.sqrt(YEAR_DAYS))


def max_drawdown(equity: list[float]) -> float:
    curve = np.asarray(equity, dtype=float)
    if len(curve) == 0:
        return 0.0
    return float((1.0 - curve / np.maximum.accumulate(curve)).max())


def metrics(*, equity: list[float], traded: float) -> dict[str, float]:
    assert equity and equity[0] > 0, f"an equity curve starts with positive capital, got {equity[:1]}"
    return {
        "total_return": round(equity[-1] / equity[0] - 1.0, 6),
        "sharpe": round(sharpe_ratio(equity), 4),
        "max_drawdown": round(max_drawdown(equity), 6),
        "turnover": round(traded / equity[0], 4),
    }


def composite(m: dict[str, float]) -> float:
    """0.5 + 0.25 tanh(Sharpe / 2) + 0.25 tanh(return / 10%) - 0.25 min(1, drawdown / 25%), clipped to [0, 1]."""
    value = 0.5 + 0.25 * math.tanh(m["sharpe"] / 2) + 0.25 * math.tanh(m["total_return"] / 0.10) - 0.25 * min(1.0, m["max_drawdown"] / 0.25)
    return round(min(1.0, max(0.0, value)), 6)
