"""The deterministic resolver: a strategy with parameters -> the contracts, quantities and fills that implement it.

    plan = resolve(market, day, equity, Request("IDX", "iron_condor", expiry="month", moneyness="mid", risk_budget=0.02))
    plan.legs                  # [Leg("IDX-E146-P3900", -4, 31.2), ...] at today's bid (sells) and ask (buys)

Rules, in order (each one a small function, so tests pin them):
1. Expiry: the listed expiry whose days-to-expiry is closest to the bucket's target (week 5, month 21, quarter
   63), never one expiring within 2 days; ties go to the earlier. A calendar's far leg: the first expiry at
   least 15 days after the near one.
2. At the money: the listed strike nearest the spot (ties to the lower). Out of the money: the strike whose
   |delta| on the surface is the moneyness' target (near 0.40, mid 0.25, far 0.10), found by brentq and
   rounded to the grid, then pushed at least one grid step away from the at-the-money strike. Wings (condor,
   butterfly): as far beyond as the short strike is from the money, at least two steps.
3. Size: the risk budget is a fraction of equity; one unit's risk is its worst scenario loss at the nearest
   expiry (environments.optionsdesk.book.scenario_pnl) plus the spread paid and fees; units = floor(budget *
   equity / risk per unit), refused below one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from environments.optionsdesk.book import STOCK_HALF_SPREAD, Leg, cash_flow, fees, marks, scenario_pnl
from environments.optionsdesk.chain import MULTIPLIER, Contract, expiries, implied_vols, quotes, strikes
from environments.optionsdesk.market import Market
from environments.optionsdesk.pricing import YEAR_DAYS, strike_for_delta

STRATEGIES: dict[str, str] = {
    "long_straddle": "buy an at-the-money call and put: pays off on a large move either way",
    "short_straddle": "sell an at-the-money call and put: earns the premium if the price stays put",
    "long_strangle": "buy an out-of-the-money call and put: a cheaper bet on a large move",
    "short_strangle": "sell an out-of-the-money call and put: earns premium unless the price moves far",
    "bull_call_spread": "buy the at-the-money call, sell an out-of-the-money call: a capped bet on a rise",
    "bear_put_spread": "buy the at-the-money put, sell an out-of-the-money put: a capped bet on a fall",
    "iron_condor": "sell an out-of-the-money strangle, buy wings beyond it: capped premium selling",
    "long_butterfly": "buy two wing calls, sell two at-the-money calls: pays if the price ends near today's",
    "calendar": "sell the near at-the-money call, buy a later one: earns the near option's faster decay",
    "covered_call": "hold 100 shares per unit and sell an out-of-the-money call against them",
    "protective_put": "hold 100 shares per unit and buy an out-of-the-money put under them",
}
BUCKETS: dict[str, int] = {"week": 5, "month": 21, "quarter": 63}
MONEYNESS: dict[str, float] = {"near": 0.40, "mid": 0.25, "far": 0.10}
MIN_DTE = 2


@dataclass(frozen=True)
class Request:
    underlying: str
    strategy: str
    expiry: str = "month"
    moneyness: str = "mid"
    risk_budget: float = 0.02  # fraction of equity the position may lose in its worst scenario


@dataclass(frozen=True)
class Plan:
    legs: tuple[Leg, ...]  # the fills for `units` units
    units: int
    risk_per_unit: float
    budget: float


class ResolveError(ValueError):
    """The request cannot be implemented today; the message says why, with the numbers."""


def pick_expiry(day: int, bucket: str, *, after: int = 0) -> int:
    listed = [e for e in expiries(day) if e - day >= max(MIN_DTE, after)]
    if not listed:
        raise ResolveError(f"no expiry at least {max(MIN_DTE, after)} days out on day {day}")
    target = day + BUCKETS[bucket] if not after else day + after
    return min(listed, key=lambda e: (abs(e - target), e))


def atm_strike(grid: list[float], spot: float) -> float:
    return min(grid, key=lambda k: (abs(k - spot), k))


def otm_strike(market: Market, day: int, i: int, expiry: int, *, call: bool, delta: float, grid: list[float]) -> float:
    spot = float(market.close[day, i])
    years = (expiry - day) / YEAR_DAYS
    raw = strike_for_delta(target=delta, spot=spot, years=years, call=call, vol_at=lambda k: float(implied_vols(market, day, i, k, expiry)))
    atm, position = atm_strike(grid, spot), grid.index(atm_strike(grid, raw))
    if call and grid[position] <= atm:
        position = min(grid.index(atm) + 1, len(grid) - 1)
    if not call and grid[position] >= atm:
        position = max(grid.index(atm) - 1, 0)
    return grid[position]


def wing(grid: list[float], inner: float, outer_from: float) -> float:
    """A strike beyond `inner`, away from `outer_from`, by the same distance (at least two grid steps)."""
    step = grid[1] - grid[0] if len(grid) > 1 else 1.0
    distance = max(abs(inner - outer_from), 2 * step)
    target = inner + math.copysign(distance, inner - outer_from)
    return min(grid, key=lambda k: (abs(k - target), k))


def unit_legs(market: Market, day: int, request: Request) -> list[tuple[Contract | str, int]]:
    """One unit of the strategy: (contract or stock symbol, signed quantity) pairs."""
    symbol, i = request.underlying, market.index(request.underlying)
    grid, spot = strikes(market, day, i), float(market.close[day, i])
    expiry = pick_expiry(day, request.expiry)
    delta = MONEYNESS[request.moneyness]
    atm = atm_strike(grid, spot)

    def option(strike: float, call: bool, when: int = expiry) -> Contract:
        return Contract(symbol, when, call, strike)

    def otm(call: bool) -> float:
        return otm_strike(market, day, i, expiry, call=call, delta=delta, grid=grid)

    s = request.strategy
    if s in ("long_straddle", "short_straddle"):
        sign = 1 if s == "long_straddle" else -1
        return [(option(atm, True), sign), (option(atm, False), sign)]
    if s in ("long_strangle", "short_strangle"):
        sign = 1 if s == "long_strangle" else -1
        return [(option(otm(True), True), sign), (option(otm(False), False), sign)]
    if s == "bull_call_spread":
        return [(option(atm, True), 1), (option(otm(True), True), -1)]
    if s == "bear_put_spread":
        return [(option(atm, False), 1), (option(otm(False), False), -1)]
    if s == "iron_condor":
        put, call = otm(False), otm(True)
        return [
            (option(wing(grid, put, atm), False), 1),
            (option(put, False), -1),
            (option(call, True), -1),
            (option(wing(grid, call, atm), True), 1),
        ]
    if s == "long_butterfly":
        low, high = wing(grid, atm, otm(True)), wing(grid, atm, otm(False))
        return [(option(low, True), 1), (option(atm, True), -2), (option(high, True), 1)]
    if s == "calendar":
        far = pick_expiry(day, request.expiry, after=expiry - day + 15)
        return [(option(atm, True), -1), (option(atm, True, far), 1)]
    if s == "covered_call":
        return [(symbol, MULTIPLIER), (option(otm(True), True), -1)]
    assert s == "protective_put", f"unknown strategy {s!r}"
    return [(symbol, MULTIPLIER), (option(otm(False), False), 1)]


def fill(market: Market, day: int, pairs: list[tuple[Contract | str, int]], units: int) -> list[Leg]:
    """Buys at the ask, sells at the bid (stock: the close plus or minus a hair)."""
    contracts = [c for c, _ in pairs if isinstance(c, Contract)]
    book = {row["contract"]: row for row in quotes(market, day, contracts)}
    legs = []
    for instrument, quantity in pairs:
        if isinstance(instrument, str):
            spot = float(market.close[day, market.index(instrument)])
            legs.append(Leg(instrument, quantity * units, round(spot * (1 + STOCK_HALF_SPREAD * (1 if quantity > 0 else -1)), 4)))
        else:
            row = book[instrument.id]
            legs.append(Leg(instrument.id, quantity * units, row["ask"] if quantity > 0 else row["bid"]))
    return legs


def resolve(market: Market, day: int, equity: float, request: Request) -> Plan:
    pairs = unit_legs(market, day, request)
    one = fill(market, day, pairs, 1)
    horizon = min((c.expiry for c, _ in pairs if isinstance(c, Contract)), default=day) - day
    worst = float(-scenario_pnl(market, day, one, horizon=horizon).min())
    spread_paid = -cash_flow(one) - float(marks(market, day, one)[0].sum())  # paid at bid/ask over the mid value
    risk = max(worst, 0.0) + spread_paid + fees(one)
    budget = request.risk_budget * equity
    units = int(budget // risk) if risk > 0 else 0
    if units < 1:
        raise ResolveError(f"one unit of {request.strategy} on {request.underlying} risks ${risk:,.2f}; the budget is ${budget:,.2f}")
    return Plan(tuple(fill(market, day, pairs, units)), units, round(risk, 2), round(budget, 2))
