"""OptionsDeskEnv: trade options on a seeded market, one day at a time, through strategy-level actions.

Tools
    market_snapshot, option_chain, portfolio, read_news, pnl_history: free reads of the market and the book as of
    today's close (nothing after it). open_strategy: a strategy with parameters, implemented by the
    deterministic resolver (resolver.py). place_order: raw orders, only with the `expert` option.
    close_position: a position or all. next_day: end the day; trading nothing is this call alone.

Rewards
    0 on every step but the last, which carries the composite (scoring.py): Sharpe, return and drawdown of
    the end-of-day equity curve.

Episode End
    "horizon_reached" on the period's last close (the book is liquidated first), "bankrupt" when equity
    reaches zero, or the harness' "max_steps" (12 calls per trading day).

Arguments
    The task picks the period of the seed's history (train / validation / out-of-sample). Options: `news`
    (default true; false answers read_news with nothing, the ablation), `expert` (default false; adds
    place_order), `window_start` and `window_days` (a sub-window of the period, for short training episodes),
    `compact` (default false; one-line results for the frequent tools, compact.py). A short task (compact.py
    SHORT_TASKS) sets these as its defaults, its window picked by the seed; options given explicitly win.
    `probe` (insurance / deal; the tasks probe-insurance and probe-deal): one risk decision with explicit stakes
    over the desk's resources (probes.py) on an out-of-sample day: reads work, trading is closed, riskprobe's
    `choose` tool decides and ends the episode; the composite is then 1 for a valid choice (riskprobe's rule).

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random
from typing import Any

from environments.core import Env, EnvError, Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.optionsdesk.book import STOCK_HALF_SPREAD, Leg
from environments.optionsdesk.chain import is_listed, parse_contract, quotes
from environments.optionsdesk.compact import compact_result, seed_window
from environments.optionsdesk.market import SYMBOLS, Market, market_for
from environments.optionsdesk.probes import PROBE_FAMILIES, desk_probe, draw_outcome, probe_day
from environments.optionsdesk.resolver import Request, ResolveError, resolve
from environments.optionsdesk.scoring import composite, metrics
from environments.optionsdesk.tools import (
    CHAIN,
    CLOSE,
    HISTORY,
    NEWS,
    NEXT_DAY,
    OPEN,
    ORDER,
    PORTFOLIO,
    SNAPSHOT,
    chain_view,
    history_view,
    news_view,
    portfolio_view,
    snapshot_view,
)
from environments.optionsdesk.world import CAPITAL, PERIODS, Desk, desk_advance, desk_close, desk_open, equity_now, new_desk
from environments.riskprobe.cara import expected_value
from environments.riskprobe.env import choose_tool
from environments.riskprobe.probes import Probe

CALLS_PER_DAY = 12
TRADING = ("open_strategy", "place_order", "close_position", "next_day")  # closed in a probe episode (a preview is a read)
PROBE_CLOSED = "this episode is one decision: trading is closed; read what you need and answer with choose"


class OptionsDeskEnv(Env):
    name = "optionsdesk"
    version = "1"
    options_schema = {
        "type": "object",
        "properties": {
            "news": {"type": "boolean"},
            "expert": {"type": "boolean"},
            "window_start": {"type": "integer", "minimum": 0, "maximum": 200},
            "window_days": {"type": "integer", "minimum": 5, "maximum": 200},
            "compact": {"type": "boolean"},
            "probe": {"type": "string", "enum": list(PROBE_FAMILIES)},
        },
        "additionalProperties": False,
    }

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        first, last = PERIODS[str(task.spec["period"])]
        # a short task's fields are defaults under the episode's own options (self.options stays what was asked)
        defaults: dict[str, Any] = {k: task.spec[k] for k in ("news", "compact", "window_days", "probe") if k in task.spec}
        self.settings: dict[str, Any] = {**defaults, **self.options}
        days = int(self.settings.get("window_days", last - first))
        offset = seed_window(seed, last - first, days) if "window_days" in task.spec else 0
        self.start = first + int(self.settings.get("window_start", offset))
        self.end = min(last, self.start + days)
        self.probe: Probe | None = None
        self.decision: tuple[str, float] | None = None  # (option chosen, its drawn outcome in credits) in a probe episode
        if family := self.settings.get("probe"):
            self.probe, self.start = desk_probe(family, seed), probe_day(family, seed)
            self.end = self.start + 5  # never reached: the decision ends the episode
        if self.end - self.start < 5:
            raise EnvError(
                "bad_options",
                f"options.window_start: {self.options.get('window_start')} leaves under 5 days of {task.key}'s {last - first}",
            )
        self.market: Market = market_for(seed)
        self.desk: Desk = new_desk(start=self.start, end=self.end)
        self._tools = [SNAPSHOT, CHAIN, PORTFOLIO, NEWS, HISTORY, OPEN, *([ORDER] if self.settings.get("expert") else []), CLOSE, NEXT_DAY]
        if self.probe is not None:
            self._tools.append(choose_tool(self.probe))

    def reset(self) -> Observation:
        self.desk = new_desk(start=self.start, end=self.end)
        self.decision = None
        if self.probe is not None:
            text = f"{self.probe.text}\nThe desk's tools read the market of day {self.start}; trading is closed in this episode."
            return Observation(text=text, data={"family": self.probe.family, "resources": self.probe.resources, "day": self.start})
        text = (
            f"You run an options desk with ${CAPITAL:,.0f}. Underlyings: {', '.join(SYMBOLS)} (IDX is the index). "
            f"Today is day {self.start}; the episode ends at the close of day {self.end}, when the book is liquidated. "
            "Options are European, cash-settled, 100 shares per contract; rates are zero. Read the market, open "
            "strategies sized by a risk budget (or trade nothing), and end each day with next_day."
        )
        return Observation(text=text, data={"period": self.task.key, "start": self.start, "end": self.end})

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    @property
    def max_steps(self) -> int:
        return CALLS_PER_DAY * (self.end - self.start)

    def step(self, call: ToolCall) -> StepResult:
        if self.desk.finished:
            return StepResult(content={"error": "the episode is over"}, is_error=True, done=True, termination_reason=self.desk.reason)
        spec = self.tool(call.name)
        if spec is None:
            return StepResult(content={"error": f"unknown tool {call.name!r}; tools: {[t.name for t in self._tools]}"}, is_error=True)
        if problem := validate_arguments(spec.parameters, call.arguments):
            return StepResult(content={"error": problem}, is_error=True)
        result = self._apply(call.name, call.arguments)
        if self.settings.get("compact") and isinstance(result.content, dict):
            result.content = compact_result(call.name, result.content)
        if self.desk.finished:
            result.done, result.termination_reason = True, self.desk.reason
            result.reward = self.score().composite
        return result

    def _apply(self, name: str, args: dict[str, Any]) -> StepResult:
        market, desk = self.market, self.desk
        if name == "market_snapshot":
            return StepResult(content=snapshot_view(market, desk.day))
        if name == "option_chain":
            return StepResult(content=chain_view(market, desk.day, args))
        if name == "portfolio":
            return StepResult(content=portfolio_view(market, desk))
        if name == "read_news":
            if self.settings.get("news") is False:
                return StepResult(content={"headlines": [], "note": "news is switched off in this episode"})
            return StepResult(content=news_view(market, desk.day, int(args.get("days", 5))))
        if name == "pnl_history":
            return StepResult(content=history_view(desk))
        if self.probe is not None and (name == "choose" or name in TRADING and not args.get("preview")):
            return self._decide(args["option"]) if name == "choose" else StepResult(content={"error": PROBE_CLOSED}, is_error=True)
        if name == "next_day":
            event = desk_advance(market, desk)
            return StepResult(content=event, events=[Event("desk", "day", before=desk.day - 1, after=desk.day)])
        if name == "close_position":
            return self._close(args["position"])
        if name == "open_strategy":
            return self._open(args)
        return self._order(args)

    def make_probe(self) -> Probe | None:
        """The decision this episode poses (None outside probe tasks); riskprobe's CARA anchors read it."""
        return self.probe

    def _decide(self, option: str) -> StepResult:
        assert self.probe is not None, "choose exists only in probe episodes"
        draw = random.Random(f"optionsdesk/outcome/{self.probe.family}/{self.seed}").random()  # fixed per seed, whatever is chosen
        outcome = draw_outcome(self.probe.lottery(option), draw)
        self.decision = (option, outcome)
        self.desk.finished, self.desk.reason = True, "agent_stop"
        before = self.probe.resources
        content = {"option": option, "change": round(outcome), "resources": round(before + outcome)}
        return StepResult(content=content, events=[Event("desk", "credits", before=before, after=round(before + outcome))])

    def _open(self, args: dict[str, Any]) -> StepResult:
        request = Request(
            args["underlying"],
            args["strategy"],
            args.get("expiry", "month"),
            args.get("moneyness", "mid"),
            float(args.get("risk_budget", 0.02)),
        )
        try:
            plan = resolve(self.market, self.desk.day, equity_now(self.market, self.desk), request)
        except ResolveError as exc:
            return StepResult(content={"error": str(exc)}, is_error=True)
        legs = [{"instrument": leg.instrument, "quantity": leg.quantity, "price": leg.price} for leg in plan.legs]
        summary = {
            "strategy": request.strategy,
            "units": plan.units,
            "risk_per_unit": plan.risk_per_unit,
            "budget": plan.budget,
            "legs": legs,
        }
        if args.get("preview"):
            return StepResult(content={"preview": True, **summary})
        return self._book(request.strategy, request.underlying, list(plan.legs), summary)

    def _order(self, args: dict[str, Any]) -> StepResult:
        instrument, sign = args["instrument"], 1 if args["side"] == "buy" else -1
        contract = parse_contract(instrument)
        if contract is None and instrument not in SYMBOLS:
            return StepResult(
                content={"error": f"arguments.instrument: {instrument!r} is neither a contract id like IDX-E41-C410 nor a symbol"},
                is_error=True,
            )
        if contract is not None and not is_listed(self.market, self.desk.day, contract):
            return StepResult(
                content={"error": f"arguments.instrument: {instrument!r} is not listed today (see option_chain)"}, is_error=True
            )
        if contract is None:
            spot = float(self.market.close[self.desk.day, SYMBOLS.index(instrument)])
            price = round(spot * (1 + sign * STOCK_HALF_SPREAD), 4)
        else:
            row = quotes(self.market, self.desk.day, [contract])[0]
            price = row["ask"] if sign > 0 else row["bid"]
        legs = [Leg(instrument, sign * int(args["quantity"]), price)]
        symbol = contract.symbol if contract else instrument
        return self._book(
            "order", symbol, legs, {"strategy": "order", "legs": [{"instrument": instrument, "quantity": legs[0].quantity, "price": price}]}
        )

    def _book(self, strategy: str, underlying: str, legs: list[Leg], summary: dict[str, Any]) -> StepResult:
        outcome = desk_open(self.market, self.desk, strategy=strategy, underlying=underlying, legs=legs)
        if isinstance(outcome, str):
            return StepResult(content={"error": outcome}, is_error=True)
        return StepResult(
            content={"position": outcome.id, **summary, "cash": round(self.desk.cash, 2)},
            events=[Event(f"position:{outcome.id}", "opened", after=strategy)],
        )

    def _close(self, which: str) -> StepResult:
        ids = list(self.desk.groups) if which == "all" else [which]
        if which != "all" and which not in self.desk.groups:
            return StepResult(
                content={"error": f"arguments.position: no open position {which!r}; open: {list(self.desk.groups) or 'none'}"},
                is_error=True,
            )
        proceeds = {g: round(desk_close(self.market, self.desk, g), 2) for g in ids}
        return StepResult(
            content={"closed": proceeds, "cash": round(self.desk.cash, 2)}, events=[Event(f"position:{g}", "closed") for g in ids]
        )

    def score(self) -> Score:
        if self.probe is not None:
            answered = 1.0 if self.decision else 0.0
            value = expected_value(self.probe.lottery(self.decision[0])) if self.decision else 0.0
            return Score(
                composite=answered,
                passed=answered >= self.task.pass_threshold,
                termination_reason=self.termination_reason,
                components={"answered": answered, "expected_value": value},
                details={
                    "family": self.probe.family,
                    "choice": self.decision and self.decision[0],
                    "outcome": self.decision and self.decision[1],
                },
            )
        m = metrics(equity=self.desk.equity, traded=self.desk.traded)
        value = composite(m) if self.desk.finished else 0.0
        details = {"days": len(self.desk.equity) - 1, "fees": round(self.desk.fees_paid, 2), "margin_calls": self.desk.margin_calls}
        return Score(
            composite=value,
            passed=self.desk.finished and value >= self.task.pass_threshold,
            components=m,
            termination_reason=self.desk.reason,
            details=details,
        )

    def snapshot(self) -> bytes:
        return pickle.dumps(self.desk if self.probe is None else (self.desk, self.decision))

    def restore(self, blob: bytes) -> None:
        state = pickle.loads(blob)
        self.desk, self.decision = state if self.probe is not None else (state, None)

    def state_hash(self) -> str:
        if self.probe is None:
            return self.desk.state_hash()
        return hashlib.sha256(json.dumps([self.desk.state_hash(), self.decision]).encode()).hexdigest()[:32]

    @property
    def done(self) -> bool:
        return self.desk.finished

    @property
    def termination_reason(self) -> str | None:
        return self.desk.reason if self.desk.finished else None

    def status(self) -> dict[str, str]:
        return {"day": f"day {self.desk.day} of {self.start}-{self.end}", "equity": f"equity at last close ${self.desk.equity[-1]:,.0f}"}
