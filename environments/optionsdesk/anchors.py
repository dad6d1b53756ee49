"""Scripted desks: the anchors every options-desk score is read against.

    no-trade          ends every day without trading: the composite's 0.5 baseline
    always-straddle   every 5 days: close everything, buy an at-the-money weekly straddle on the index
    regime-rule       every 5 days: read the snapshot, guess the regime from index vol and trend, pick a strategy
    learned-selector  every 5 days: a scikit-learn classifier (learned.py) picks the strategy from the snapshot
    hindsight-oracle  every 5 days: tries a menu of strategies on the real future and keeps the best (cheats)

All but the oracle act on tool results alone. Every trade is a weekly (EXPIRY) through the resolver with a 2%
risk budget, so the anchors differ only in what they choose, not in how much they bet.
"""

from __future__ import annotations

import json
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.optionsdesk.env import OptionsDeskEnv
from environments.optionsdesk.market import SYMBOLS, Market
from environments.optionsdesk.resolver import Request, ResolveError, resolve
from environments.optionsdesk.world import CAPITAL, desk_advance, desk_close, desk_open, new_desk
from environments.records import Step

HOLD = 5  # days between decisions
BUDGET = 0.02
# Weeklies: decided on every fifth day, they settle (free) just before the next decision, so the anchors pay the
# spread once per trade instead of again on closing; rolling month options every 5 days lost to spreads alone.
EXPIRY = "week"
MENU: tuple[str, ...] = ("iron_condor", "bull_call_spread", "bear_put_spread", "long_straddle")  # learned and rule choices


def last_result(history: list[Step]) -> dict[str, Any]:
    """The newest tool result in the history, as an object ({} when there is none or it is not one)."""
    for step in reversed(history):
        for result in reversed(step.get("results") or []):
            content = result.get("content")
            if isinstance(content, str) and content.startswith("{"):
                content = json.loads(content)
            return content if isinstance(content, dict) else {}
    return {}


def hindsight_pnl(market: Market, day: int, request: Request | None, *, hold: int = HOLD, end: int | None = None) -> float:
    """What `request` opened on `day` and closed `hold` days later would have made, under the desk's own rules
    (fills, fees, settlement). Reads the future: for the oracle and for labelling training data only."""
    last = min(day + hold, end if end is not None else market.close.shape[0] - 1)
    if request is None or last <= day:
        return 0.0
    desk = new_desk(start=day, end=last + 1)
    try:
        plan = resolve(market, day, CAPITAL, request)
    except ResolveError:
        return float("-inf")
    if isinstance(desk_open(market, desk, strategy=request.strategy, underlying=request.underlying, legs=list(plan.legs)), str):
        return float("-inf")
    while desk.day < last and not desk.finished:
        desk_advance(market, desk)
    for group_id in list(desk.groups):
        desk_close(market, desk, group_id)
    return desk.cash - CAPITAL


class DeskPolicy(Policy):
    """Every HOLD days: look (market_snapshot), close everything, open the chosen strategy, end the day."""

    name = "desk"
    reads_snapshot = True

    def __init__(self, env: Env, seed: int) -> None:
        self.env, self.seed = env, seed
        self.days = 0  # next_day calls made
        self.queue: list[ToolCall] = []
        self.looked = False

    def choose(self, snapshot: dict[str, Any]) -> Request | None:
        return None

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        if not self.queue:
            self._plan(history)
        call = self.queue.pop(0)
        if call.name == "next_day":
            self.days += 1
        return Action(tool_calls=[ToolCall(call.name, call.arguments, f"c{len(history)}")])

    def _plan(self, history: list[Step]) -> None:
        if self.days % HOLD != 0:
            self.queue = [ToolCall("next_day", {})]
            return
        if self.reads_snapshot and not self.looked:
            self.looked, self.queue = True, [ToolCall("market_snapshot", {})]
            return
        self.looked = False
        request = self.choose(last_result(history) if self.reads_snapshot else {})
        self.queue = [ToolCall("close_position", {"position": "all"})]
        if request is not None:
            args = {
                "underlying": request.underlying,
                "strategy": request.strategy,
                "expiry": request.expiry,
                "moneyness": request.moneyness,
                "risk_budget": request.risk_budget,
            }
            self.queue.append(ToolCall("open_strategy", args))
        self.queue.append(ToolCall("next_day", {}))


class NoTrade(DeskPolicy):
    name = "no-trade"
    reads_snapshot = False

    def _plan(self, history: list[Step]) -> None:
        self.queue = [ToolCall("next_day", {})]


class AlwaysStraddle(DeskPolicy):
    name = "always-straddle"
    reads_snapshot = False

    def choose(self, snapshot: dict[str, Any]) -> Request | None:
        return Request("IDX", "long_straddle", EXPIRY, "mid", BUDGET)


def index_row(snapshot: dict[str, Any]) -> dict[str, Any]:
    return next((row for row in snapshot.get("underlyings", []) if row.get("symbol") == "IDX"), {})


class RegimeRule(DeskPolicy):
    """Volatile (realized vol over 25%): buy a straddle only when implied vol is below realized, else stay out.
    Trending (20-day move over 4%): a spread in the trend's direction. Otherwise, when implied vol is above
    realized, sell a condor: the variance premium is the market's one steady edge (measured on training seeds
    0-4: weekly index condors made money on average, weekly straddles lost)."""

    name = "regime-rule"

    def choose(self, snapshot: dict[str, Any]) -> Request | None:
        row = index_row(snapshot)
        if not row:
            return None
        realized, implied, trend = row["realized_vol_20d"], row["implied_vol_1m"], row["ret_20d"]
        if realized > 0.25:
            if implied >= realized:
                return None
            strategy = "long_straddle"
        elif abs(trend) > 0.04:
            strategy = "bull_call_spread" if trend > 0 else "bear_put_spread"
        elif implied > realized:
            strategy = "iron_condor"
        else:
            return None
        return Request("IDX", strategy, EXPIRY, "mid", BUDGET)


class HindsightOracle(DeskPolicy):
    """Looks at the real future: of every (underlying, strategy) in the menu, opens the one that will have made
    the most over the next HOLD days, or nothing when none makes money. An upper reference, not a policy."""

    name = "hindsight-oracle"
    reads_snapshot = False
    strategies: tuple[str, ...] = (*MENU, "short_strangle", "long_strangle")

    def choose(self, snapshot: dict[str, Any]) -> Request | None:
        market, day, end = self._world()
        best, best_pnl = None, 0.0
        for symbol in SYMBOLS:
            for strategy in self.strategies:
                request = Request(symbol, strategy, EXPIRY, "mid", BUDGET)
                pnl = hindsight_pnl(market, day, request, end=end)
                if pnl > best_pnl:
                    best, best_pnl = request, pnl
        return best

    def _world(self) -> tuple[Market, int, int]:
        env = self.env  # the oracle's one privilege: the env object, and through it the future
        assert isinstance(env, OptionsDeskEnv), f"the oracle reads an options desk, not {type(env).__name__}"
        return env.market, env.desk.day, env.end
