"""The desk's state and the rules that change it: open, close, and the end of a trading day.

    desk = new_desk(start=205, end=265)
    desk_open(market, desk, strategy="iron_condor", underlying="IDX", legs=plan.legs)   # a Group, or an error text
    desk_advance(market, desk)        # next close: expiries settle, the book is marked, margin is checked

Trades fill at the current day's close quotes. An option expiring on day d settles at its intrinsic value on
day d's close, before that day's mark. A day ends with a margin check: if the scenario margin exceeds equity
the whole book is liquidated (a margin call), and equity at or below zero ends the episode as "bankrupt". On
the last day of the period the book is liquidated at bid/ask, so the final equity is money, not a mark.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from environments.optionsdesk.book import MULTIPLIER, Group, Leg, cash_flow, fees, margin_required, marks
from environments.optionsdesk.chain import parse_contract
from environments.optionsdesk.market import Market

CAPITAL = 1_000_000.0
# Day ranges of one history (the first WARMUP days give every feature a past): [start, end].
PERIODS: dict[str, tuple[int, int]] = {"train": (25, 145), "validation": (145, 205), "oos": (205, 265)}


@dataclass
class Desk:
    start: int
    end: int
    day: int
    cash: float = CAPITAL
    groups: dict[str, Group] = field(default_factory=dict)
    equity: list[float] = field(default_factory=lambda: [CAPITAL])  # one mark per close from `start`
    traded: float = 0.0  # notional of every fill, for turnover
    fees_paid: float = 0.0
    next_id: int = 1
    margin_calls: int = 0
    finished: bool = False
    reason: str | None = None

    def legs(self) -> list[Leg]:
        return [leg for group in self.groups.values() for leg in group.legs]

    def state_hash(self) -> str:
        groups = {g.id: [g.strategy, g.opened, [[leg.instrument, leg.quantity, leg.price] for leg in g.legs]] for g in self.groups.values()}
        state = [
            self.day,
            round(self.cash, 6),
            groups,
            [round(e, 6) for e in self.equity],
            round(self.traded, 6),
            self.next_id,
            self.reason,
        ]
        return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]


def new_desk(*, start: int, end: int) -> Desk:
    assert 0 <= start < end, f"period [{start}, {end}] is empty"
    return Desk(start=start, end=end, day=start)


def equity_now(market: Market, desk: Desk) -> float:
    mid, _ = marks(market, desk.day, desk.legs())
    return desk.cash + float(mid.sum())


def _notional(legs: list[Leg]) -> float:
    return sum(abs(leg.price * leg.quantity) * (1 if leg.is_stock else MULTIPLIER) for leg in legs)


def desk_open(market: Market, desk: Desk, *, strategy: str, underlying: str, legs: list[Leg]) -> Group | str:
    """Book the fills as a new group, unless cash or margin would not cover them (then the reason, booking nothing)."""
    cost = fees(legs)
    cash_after = desk.cash + cash_flow(legs) - cost
    if cash_after < 0:
        return f"not enough cash: the trade needs ${desk.cash - cash_after:,.2f}, the desk has ${desk.cash:,.2f}"
    group = Group(f"P{desk.next_id}", strategy, underlying, desk.day, list(legs))
    book = desk.legs() + group.legs
    mid, _ = marks(market, desk.day, book)
    equity_after, margin = cash_after + float(mid.sum()), margin_required(market, desk.day, book)
    if margin > equity_after:
        return f"margin: the book would need ${margin:,.2f} against equity of ${equity_after:,.2f}"
    desk.cash, desk.next_id = cash_after, desk.next_id + 1
    desk.groups[group.id] = group
    desk.traded += _notional(legs)
    desk.fees_paid += cost
    return group


def desk_close(market: Market, desk: Desk, group_id: str) -> float:
    """Liquidate one group at bid/ask; returns the cash it brought in, after fees."""
    group = desk.groups.pop(group_id)
    _, liquidation = marks(market, desk.day, group.legs)
    cost = fees(group.legs)
    proceeds = float(liquidation.sum()) - cost
    desk.cash += proceeds
    desk.traded += float(abs(liquidation).sum())
    desk.fees_paid += cost
    return proceeds


def desk_advance(market: Market, desk: Desk) -> dict[str, Any]:
    """Move to the next close. Returns what happened: settlements, the mark, margin calls, the end."""
    assert not desk.finished, "the episode is over"
    desk.day += 1
    settled = []
    for group in list(desk.groups.values()):
        for leg in list(group.legs):
            contract = parse_contract(leg.instrument)
            if contract is None or contract.expiry > desk.day:
                continue
            spot = float(market.close[desk.day, market.index(contract.symbol)])
            payoff = max(spot - contract.strike, 0.0) if contract.call else max(contract.strike - spot, 0.0)
            desk.cash += payoff * leg.quantity * MULTIPLIER
            group.legs.remove(leg)
            settled.append({"contract": leg.instrument, "quantity": leg.quantity, "settled_at": round(payoff, 4)})
        if not group.legs:
            del desk.groups[group.id]
    event: dict[str, Any] = {"day": desk.day, "settled": settled}
    equity = equity_now(market, desk)
    if desk.groups and (equity <= 0 or margin_required(market, desk.day, desk.legs()) > equity):
        desk.margin_calls += 1
        event["margin_call"] = True
        for group_id in list(desk.groups):
            desk_close(market, desk, group_id)
        equity = desk.cash
    if desk.day >= desk.end:
        for group_id in list(desk.groups):
            desk_close(market, desk, group_id)
        equity = desk.cash
        desk.finished, desk.reason = True, "horizon_reached"
    if equity <= 0:
        desk.finished, desk.reason = True, "bankrupt"
    desk.equity.append(equity)
    event["equity"] = round(equity, 2)
    return event
