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

from environments.meta import ScoreComponent
from environments.optionsdesk.pricing import YEAR_DAYS
from environments.riskprobe.env import COMPONENTS as PROBE_COMPONENTS

# composite = BASELINE + PART tanh(Sharpe / SHARPE_SCALE) + PART tanh(return / RETURN_SCALE) - PART min(1, drawdown / DRAWDOWN_CAP)
BASELINE, PART = 0.5, 0.25
SHARPE_SCALE, RETURN_SCALE, DRAWDOWN_CAP = 2.0, 0.10, 0.25
_TRADES = ("open_strategy", "close_position")
_COMPOSITE = (
    f"composite = {BASELINE:g} + {PART:g} tanh(Sharpe / {SHARPE_SCALE:g}) + {PART:g} tanh(return / {RETURN_SCALE:.0%}) "
    f"- {PART:g} min(1, drawdown / {DRAWDOWN_CAP:.0%}), clipped to [0, 1]; doing nothing scores {BASELINE:g}"
)
# What the viewer says of each score component (the module docstring, in a reader's words). A probe task (probes.py)
# reports riskprobe's components instead; its `choose` tool exists only there, so nothing here names it.
COMPONENTS = {
    "total_return": ScoreComponent(f"last equity / first - 1, the book liquidated at the end; {_COMPOSITE}", moved_by=_TRADES),
    "sharpe": ScoreComponent(
        f"mean daily return / its standard deviation × √{YEAR_DAYS} (0 with under two returns); {_COMPOSITE}", moved_by=_TRADES
    ),
    "max_drawdown": ScoreComponent(
        f"the largest fall of equity from a running peak, as a share of that peak; {_COMPOSITE}", moved_by=_TRADES
    ),
    "turnover": ScoreComponent(
        "premium and stock notional traded / starting capital; reported, not charged (spreads and fees already are, in the return)",
        moved_by=_TRADES,
    ),
    **{name: ScoreComponent(c.measures + " (probe tasks)", c.weight, c.of) for name, c in PROBE_COMPONENTS.items()},
}


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
    value = (
        BASELINE
        + PART * math.tanh(m["sharpe"] / SHARPE_SCALE)
        + PART * math.tanh(m["total_return"] / RETURN_SCALE)
        - PART * min(1.0, m["max_drawdown"] / DRAWDOWN_CAP)
    )
    return round(min(1.0, max(0.0, value)), 6)
