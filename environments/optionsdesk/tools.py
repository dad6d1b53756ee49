"""The desk's tools, declared once (environments.core.ToolSpec), and the read-only views they return.

Reads (snapshot, chain, portfolio, news, P&L history) cost nothing and never move the clock; trades fill at
today's close quotes; `next_day` ends the day. Every view reads the market at `desk.day` or earlier only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from environments.core import ToolSpec
from environments.optionsdesk.book import margin_required, marks
from environments.optionsdesk.chain import MULTIPLIER, implied_vols, listed, parse_contract, quotes
from environments.optionsdesk.market import SYMBOLS, Market
from environments.optionsdesk.pricing import greeks
from environments.optionsdesk.resolver import BUCKETS, MONEYNESS, STRATEGIES, pick_expiry
from environments.optionsdesk.world import Desk, equity_now

_SYMBOL = {"type": "string", "enum": list(SYMBOLS)}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None, required: tuple[str, ...] = (), **kw: Any) -> ToolSpec:
    schema = {"type": "object", "properties": properties or {}, "required": list(required), "additionalProperties": False}
    return ToolSpec(name=name, description=description, parameters=schema, **kw)


SNAPSHOT = _tool(
    "market_snapshot", "Today's market: each underlying's price, returns, realized and implied vol, next earnings.", category="read"
)
CHAIN = _tool(
    "option_chain",
    "Option quotes for one underlying, per share (one contract = 100 shares), filtered by expiry bucket, type and moneyness (strike/spot).",
    {
        "underlying": _SYMBOL,
        "expiry": {"type": "string", "enum": [*BUCKETS, "all"]},
        "type": {"type": "string", "enum": ["call", "put", "both"]},
        "moneyness_min": {"type": "number", "minimum": 0.5, "maximum": 1.5},
        "moneyness_max": {"type": "number", "minimum": 0.5, "maximum": 1.5},
        "limit": {"type": "integer", "minimum": 1, "maximum": 120},
    },
    ("underlying",),
    category="read",
)
PORTFOLIO = _tool("portfolio", "Cash, equity, margin, open positions with their P&L, and the book's greeks.", category="read")
NEWS = _tool(
    "read_news",
    "Headlines of the last few days, each with its source.",
    {"days": {"type": "integer", "minimum": 1, "maximum": 20}},
    category="read",
)
HISTORY = _tool("pnl_history", "The desk's equity at every close so far.", category="read")
OPEN = _tool(
    "open_strategy",
    "Open a strategy; a deterministic resolver picks the contracts and sizes it so its worst scenario loses at most risk_budget of equity. "
    + "Strategies: "
    + "; ".join(f"{k}: {v}" for k, v in STRATEGIES.items()),
    {
        "underlying": _SYMBOL,
        "strategy": {"type": "string", "enum": list(STRATEGIES)},
        "expiry": {"type": "string", "enum": list(BUCKETS)},
        "moneyness": {"type": "string", "enum": list(MONEYNESS)},
        "risk_budget": {"type": "number", "minimum": 0.001, "maximum": 0.2},
        "preview": {"type": "boolean"},
    },
    ("underlying", "strategy"),
    category="trade",
)
ORDER = _tool(
    "place_order",
    "Expert mode: buy or sell one listed contract (id as in option_chain, e.g. IDX-E41-C410) or shares of an underlying, at today's bid/ask.",
    {
        "instrument": {"type": "string", "maxLength": 24},
        "side": {"type": "string", "enum": ["buy", "sell"]},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 100_000},
    },
    ("instrument", "side", "quantity"),
    category="trade",
)
CLOSE = _tool(
    "close_position",
    "Close one position (its id, e.g. P3) or all of them, at bid/ask.",
    {"position": {"type": "string", "pattern": r"P\d{1,5}|all"}},
    ("position",),
    category="trade",
)
NEXT_DAY = _tool(
    "next_day",
    "End the trading day (no trade is simply this alone); options expiring tomorrow settle at tomorrow's close.",
    category="clock",
)


def snapshot_view(market: Market, day: int) -> dict[str, Any]:
    rows = []
    for i, symbol in enumerate(SYMBOLS):
        close = market.close[max(0, day - 20) : day + 1, i]
        returns = np.diff(np.log(close))
        spot = float(market.close[day, i])
        report = market.next_earnings(i, day)
        rows.append(
            {
                "symbol": symbol,
                "price": round(spot, 2),
                "ret_1d": round(float(close[-1] / close[-2] - 1), 4) if len(close) > 1 else 0.0,
                "ret_5d": round(float(close[-1] / close[max(0, len(close) - 6)] - 1), 4),
                "ret_20d": round(float(close[-1] / close[0] - 1), 4),
                "realized_vol_20d": round(float(returns.std(ddof=1) * math.sqrt(252)), 4) if len(returns) > 1 else 0.0,
                "implied_vol_1m": round(float(implied_vols(market, day, i, spot, day + 21)), 4),
                "earnings_in_days": None if report is None else report - day,
            }
        )
    return {"day": day, "underlyings": rows}


def chain_view(market: Market, day: int, arguments: dict[str, Any]) -> dict[str, Any]:
    symbol = arguments["underlying"]
    spot = float(market.close[day, market.index(symbol)])
    low, high = arguments.get("moneyness_min", 0.9), arguments.get("moneyness_max", 1.1)
    bucket, kind = arguments.get("expiry", "month"), arguments.get("type", "both")
    contracts = [c for c in listed(market, day, symbol) if low <= c.strike / spot <= high and kind in ("both", "call" if c.call else "put")]
    if bucket != "all":
        chosen = pick_expiry(day, bucket)
        contracts = [c for c in contracts if c.expiry == chosen]
    shown = contracts[: arguments.get("limit", 40)]
    return {"underlying": symbol, "spot": round(spot, 2), "day": day, "contracts": quotes(market, day, shown), "matched": len(contracts)}


def portfolio_view(market: Market, desk: Desk) -> dict[str, Any]:
    positions, totals = [], {"delta_dollars": 0.0, "gamma_dollars": 0.0, "vega": 0.0, "theta": 0.0}
    for group in desk.groups.values():
        mid, _ = marks(market, desk.day, group.legs)
        cost = sum(leg.price * leg.quantity * (1 if leg.is_stock else MULTIPLIER) for leg in group.legs)
        positions.append(
            {
                "position": group.id,
                "strategy": group.strategy,
                "underlying": group.underlying,
                "opened": group.opened,
                "legs": ", ".join(f"{leg.quantity:+d} {leg.instrument}" for leg in group.legs),
                "value": round(float(mid.sum()), 2),
                "pnl": round(float(mid.sum()) - cost, 2),
            }
        )
        for leg in group.legs:
            spot = float(market.close[desk.day, market.index(leg.instrument.split("-")[0])])
            contract = parse_contract(leg.instrument)
            if contract is None:
                totals["delta_dollars"] += leg.quantity * spot
                continue
            i = market.index(contract.symbol)
            vol = float(implied_vols(market, desk.day, i, contract.strike, contract.expiry))
            g = greeks(spot=spot, strike=contract.strike, years=(contract.expiry - desk.day) / 252, vol=vol, call=contract.call)
            size = leg.quantity * MULTIPLIER
            totals["delta_dollars"] += float(g["delta"]) * size * spot
            totals["gamma_dollars"] += float(g["gamma"]) * size * spot * spot / 100  # delta change for a 1% move, in $
            totals["vega"] += float(g["vega"]) * size / 100  # per vol point
            totals["theta"] += float(g["theta"]) * size
    equity = equity_now(market, desk)
    return {
        "day": desk.day,
        "cash": round(desk.cash, 2),
        "equity": round(equity, 2),
        "margin": round(margin_required(market, desk.day, desk.legs()), 2),
        "positions": positions,
        "greeks": {k: round(v, 2) for k, v in totals.items()},
    }


def news_view(market: Market, day: int, days: int) -> dict[str, Any]:
    items = [{"day": h.day, "symbol": h.symbol, "source": h.source, "headline": h.text} for h in market.news if day - days < h.day <= day]
    return {"headlines": items[::-1]}


def history_view(desk: Desk) -> dict[str, Any]:
    base = desk.equity[0]
    points = [{"t": desk.start + n, "equity": round(e, 2), "pnl": round(e - base, 2)} for n, e in enumerate(desk.equity)]
    return {"points": points}
