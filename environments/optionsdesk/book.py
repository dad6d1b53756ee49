"""The desk's book: positions as groups of legs, their valuation, scenario risk and margin.

    value, liquidation = marks(market, day, legs)      # at mids, and at what closing now would fetch
    pnl = scenario_pnl(market, day, legs, horizon=0)   # (scenarios,) P&L under joint spot and vol shocks
    margin_required(market, day, legs)                 # the worst scenario loss: what equity must cover

A leg is an option contract id or a stock symbol with a signed quantity (contracts or shares). Margin is a
portfolio (scenario) margin, as exchanges compute for risk-based accounts: every underlying moves by the same
percentage, implied vols are scaled together, and the requirement is the worst loss over the grid. The same
scenarios size strategies (environments.optionsdesk.resolver), so "risk budget" means one thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from environments.optionsdesk.chain import MULTIPLIER, half_spread, implied_vols, parse_contract
from environments.optionsdesk.market import SYMBOLS, Market
from environments.optionsdesk.pricing import YEAR_DAYS, black_scholes

MOVES = np.array([-0.25, -0.15, -0.08, -0.04, 0.0, 0.04, 0.08, 0.15, 0.25])  # spot shocks, all underlyings together
VOL_SHOCKS = np.array([0.8, 1.0, 1.3])  # implied vols scaled together
STOCK_HALF_SPREAD = 0.0002  # of the price
OPTION_FEE = 0.65  # per contract, each way
STOCK_FEE = 0.005  # per share, each way


@dataclass
class Leg:
    instrument: str  # a contract id ("ALPH-E145-C102.5") or a stock symbol ("ALPH")
    quantity: int  # signed: contracts for options, shares for stock
    price: float  # the fill, per share

    @property
    def is_stock(self) -> bool:
        return self.instrument in SYMBOLS


@dataclass
class Group:
    """One position as the agent opened it: a strategy's legs, closed together."""

    id: str
    strategy: str
    underlying: str
    opened: int
    legs: list[Leg] = field(default_factory=list)


def _arrays(market: Market, day: int, legs: list[Leg]) -> dict[str, np.ndarray]:
    """The legs as arrays; implied vols come from one vectorised surface call per underlying."""
    n = len(legs)
    out = {k: np.zeros(n) for k in ("spot", "strike", "expiry", "iv", "size", "vol")}
    out["call"], out["stock"] = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    by_symbol: dict[int, list[int]] = {}
    for k, leg in enumerate(legs):
        contract = None if leg.is_stock else parse_contract(leg.instrument)
        i = market.index(leg.instrument if contract is None else contract.symbol)
        out["spot"][k], out["vol"][k] = market.close[day, i], market.vol[day, i]
        if contract is None:
            out["stock"][k], out["size"][k] = True, leg.quantity
            continue
        out["strike"][k], out["expiry"][k], out["call"][k] = contract.strike, contract.expiry, contract.call
        out["size"][k] = leg.quantity * MULTIPLIER
        by_symbol.setdefault(i, []).append(k)
    for i, rows in by_symbol.items():
        out["iv"][rows] = implied_vols(market, day, i, out["strike"][rows], out["expiry"][rows])
    return out


def _values(a: dict[str, np.ndarray], spot: np.ndarray, years: np.ndarray, vol: np.ndarray) -> np.ndarray:
    option = black_scholes(spot=spot, strike=np.where(a["stock"], 1.0, a["strike"]), years=years, vol=np.maximum(vol, 0.01), call=a["call"])
    return np.where(a["stock"], spot, option) * a["size"]


def marks(market: Market, day: int, legs: list[Leg]) -> tuple[np.ndarray, np.ndarray]:
    """Per leg: the value at mid, and the liquidation value (longs at the bid, shorts at the ask)."""
    if not legs:
        return np.zeros(0), np.zeros(0)
    a = _arrays(market, day, legs)
    return _marks(a, day)


def _marks(a: dict[str, np.ndarray], day: int) -> tuple[np.ndarray, np.ndarray]:
    value = _values(a, a["spot"], np.maximum(a["expiry"] - day, 0.0) / YEAR_DAYS, a["iv"])
    per_share = np.abs(value / np.where(a["size"] == 0, 1.0, a["size"]))
    half = np.where(a["stock"], a["spot"] * STOCK_HALF_SPREAD, half_spread(per_share, a["vol"]))
    return value, value - np.abs(a["size"]) * half


def scenario_pnl(market: Market, day: int, legs: list[Leg], *, horizon: int = 0) -> np.ndarray:
    """(len(MOVES) * len(VOL_SHOCKS),) P&L against today's mids if spots jump by MOVES and vols scale by
    VOL_SHOCKS, `horizon` days from now (options expiring by then are worth their intrinsic value)."""
    if not legs:
        return np.zeros(len(MOVES) * len(VOL_SHOCKS))
    a = _arrays(market, day, legs)
    now, _ = _marks(a, day)
    spot = a["spot"][None, :] * (1.0 + np.repeat(MOVES, len(VOL_SHOCKS))[:, None])  # (S, L)
    vol = a["iv"][None, :] * np.tile(VOL_SHOCKS, len(MOVES))[:, None]
    years = np.maximum(a["expiry"] - day - horizon, 0.0)[None, :] / YEAR_DAYS
    return (_values(a, spot, years, vol) - now[None, :]).sum(axis=1)


def margin_required(market: Market, day: int, legs: list[Leg]) -> float:
    return float(max(0.0, -scenario_pnl(market, day, legs).min()))


def fees(legs: list[Leg]) -> float:
    return sum(abs(leg.quantity) * (STOCK_FEE if leg.is_stock else OPTION_FEE) for leg in legs)


def cash_flow(legs: list[Leg]) -> float:
    """Cash a set of fills moves (buying costs, selling brings in), before fees."""
    return -sum(leg.price * leg.quantity * (1 if leg.is_stock else MULTIPLIER) for leg in legs)
