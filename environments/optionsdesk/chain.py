"""Listed contracts and their quotes on one day: expiries, the strike grid, bid/ask, implied vol and greeks.

    contracts = listed(market, day, "ALPH")                 # every contract trading that day on ALPH
    rows = quotes(market, day, contracts)                   # mid, bid, ask, iv, greeks, one dict per contract

A contract id reads "ALPH-E145-C102.5": underlying, expiry day, C or P, strike. Options are European and
cash-settled at their intrinsic value on the expiry day's close; one contract covers MULTIPLIER shares.
Everything here reads only `market.close[day]`, `market.vol[day]` and public constants (the earnings schedule),
never a later day: the chain is what the desk's market makers know at that close.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from environments.optionsdesk.market import SYMBOLS, Market
from environments.optionsdesk.pricing import YEAR_DAYS, black_scholes, greeks, surface_vol

MULTIPLIER = 100
STRIKE_RANGE = 0.30  # strikes listed within +-30% of the day's spot
WEEKLY, MONTHLY = 5, 21  # expiry cycles: weeklies every 5 days (next two), monthlies every 21 (next six)
VOL_PREMIUM = 1.12  # implied over the instantaneous vol: option sellers are paid for bearing the risk
_ID = re.compile(r"(?P<symbol>[A-Z]{3,4})-E(?P<expiry>\d{1,4})-(?P<kind>[CP])(?P<strike>\d+(\.\d+)?)")


@dataclass(frozen=True)
class Contract:
    symbol: str
    expiry: int
    call: bool
    strike: float

    @property
    def id(self) -> str:
        return f"{self.symbol}-E{self.expiry}-{'C' if self.call else 'P'}{self.strike:g}"


def parse_contract(text: str) -> Contract | None:
    match = _ID.fullmatch(text)
    if not match or match["symbol"] not in SYMBOLS:
        return None
    return Contract(match["symbol"], int(match["expiry"]), match["kind"] == "C", float(match["strike"]))


def expiries(day: int) -> list[int]:
    """Expiry days listed on `day`: the next two weeklies and the next six monthlies, strictly after it."""
    weeklies = [d for d in range(day + 1, day + 2 * WEEKLY + 1) if d % WEEKLY == WEEKLY - 1][:2]
    monthlies = [d for d in range(day + 1, day + 6 * MONTHLY + 1) if d % MONTHLY == MONTHLY - 1][:6]
    return sorted(set(weeklies + monthlies))


def strikes(market: Market, day: int, i: int) -> list[float]:
    spot, step = float(market.close[day, i]), float(market.strike_step[i])
    low, high = math.ceil(spot * (1 - STRIKE_RANGE) / step), math.floor(spot * (1 + STRIKE_RANGE) / step)
    return [round(k * step, 4) for k in range(max(low, 1), high + 1)]


def listed(market: Market, day: int, symbol: str) -> list[Contract]:
    i = market.index(symbol)
    return [Contract(symbol, e, call, k) for e in expiries(day) for k in strikes(market, day, i) for call in (True, False)]


def is_listed(market: Market, day: int, contract: Contract) -> bool:
    i = market.index(contract.symbol)
    step = float(market.strike_step[i])
    on_grid = abs(contract.strike / step - round(contract.strike / step)) < 1e-9
    spot = float(market.close[day, i])
    in_range = spot * (1 - STRIKE_RANGE) - 1e-9 <= contract.strike <= spot * (1 + STRIKE_RANGE) + 1e-9
    return contract.expiry in expiries(day) and on_grid and in_range


def implied_vols(market: Market, day: int, i: int, strike: Any, expiry: Any) -> Any:
    """The surface on `day` for underlying i; an expiry after an earnings day carries the jump's variance."""
    years = np.maximum(np.asarray(expiry, dtype=float) - day, 0.0) / YEAR_DAYS
    spot = float(market.close[day, i])
    atm = float(market.vol[day, i]) * VOL_PREMIUM
    base = surface_vol(atm=atm, long_run=float(market.long_run_vol[i]), skew=float(market.skew[i]), spot=spot, strike=strike, years=years)
    report = market.next_earnings(i, day)
    if report is None:
        return base
    spans = np.asarray(expiry) >= report
    with np.errstate(divide="ignore"):
        extra = np.where(spans, market.jump_sd[i] ** 2 / np.maximum(years, 1.0 / YEAR_DAYS), 0.0)
    return np.sqrt(base**2 + extra)


def half_spread(mid: Any, vol: Any) -> Any:
    """Half the bid-ask: a tick floor, 1.5% of the mid, wider when the underlying is volatile."""
    return np.maximum(0.01, 0.015 * mid * (1.0 + np.maximum(vol - 0.2, 0.0)))


def quotes(market: Market, day: int, contracts: list[Contract]) -> list[dict[str, Any]]:
    """One row per contract (per share; a contract is MULTIPLIER shares), vectorised per underlying."""
    rows: list[dict[str, Any]] = []
    for symbol in dict.fromkeys(c.symbol for c in contracts):
        group = [c for c in contracts if c.symbol == symbol]
        i = market.index(symbol)
        spot = float(market.close[day, i])
        strike = np.array([c.strike for c in group])
        expiry = np.array([c.expiry for c in group], dtype=float)
        call = np.array([c.call for c in group])
        years = np.maximum(expiry - day, 0.0) / YEAR_DAYS
        iv = implied_vols(market, day, i, strike, expiry)
        mid = black_scholes(spot=spot, strike=strike, years=years, vol=iv, call=call)
        half = half_spread(mid, float(market.vol[day, i]))
        g = greeks(spot=spot, strike=strike, years=years, vol=iv, call=call)
        for n, c in enumerate(group):
            rows.append(
                {
                    "contract": c.id,
                    "underlying": symbol,
                    "type": "call" if c.call else "put",
                    "strike": c.strike,
                    "expiry": c.expiry,
                    "dte": c.expiry - day,
                    "bid": round(max(float(mid[n] - half[n]), 0.0), 2),
                    "ask": round(float(mid[n] + half[n]), 2),
                    "mid": round(float(mid[n]), 4),
                    "iv": round(float(iv[n]), 4),
                    "delta": round(float(g["delta"][n]), 4),
                    "gamma": round(float(g["gamma"][n]), 6),
                    "vega": round(float(g["vega"][n]) / 100, 4),
                    "theta": round(float(g["theta"][n]), 4),
                }
            )
    order = {c.id: n for n, c in enumerate(contracts)}
    return sorted(rows, key=lambda r: order[r["contract"]])
