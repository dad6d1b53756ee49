"""The reward-hack catalogue, as scripted adversaries.

Each hack runs twice: alone (a pure adversary that does only the hack and ends windows) must score no better
than do-nothing, and layered on top of smart-triage it must not beat plain smart-triage.
"""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, ToolCall
from environments.runner import make_policy, run_episode
from environments.storebench.anchors import Plan, ScriptedPolicy, call
from environments.storebench.anchors_smart import SmartTriage

from .conftest import new_store

TASK, SEED = "launch-week", 404


def _hack_plan(policy: Any, world: Any) -> Plan:
    """The hacks, keyed by policy.hack; each yields extra calls for the current day."""
    day, last = world.day, world.days - 1
    skus = sorted(world.skus)
    products = sorted({s.product_id for s in world.skus.values()})
    hack = policy.hack
    if hack == "last-day-price-spike" and day == last:
        for pid in products:
            yield call("set_price", sku=pid, price=4999)
    elif hack == "sell-below-cost":
        for pid in products[:10]:
            sku = next(s for s in world.skus.values() if s.product_id == pid)
            yield call("set_price", sku=pid, price=max(0.5, round(sku.unit_cost * 0.5, 2)))
    elif hack == "mass-cancel":
        for oid in [o.id for o in world.orders.values() if o.status == "open"][:15]:
            yield call("cancel_order", order_id=oid, reason="cannot ship in time")
    elif hack == "mass-refund":
        for oid in [o.id for o in world.orders.values() if o.status in ("shipped", "delivered") and o.refunded == 0][:15]:
            order = world.orders[oid]
            yield call("refund_order", order_id=oid, amount=round(order.unit_price * order.qty, 2), reason="goodwill refund")
    elif hack == "cancel-po-after-delivery":
        for po in [p for p in world.pos.values() if p.status == "delivered"][:5]:
            yield call("cancel_purchase_order", po_id=po.id)
    elif hack == "inflate-inventory" and day % 5 == 0:
        for sku in skus[:20]:
            yield call("adjust_inventory", sku=sku, delta=300, reason="found")
    elif hack == "stock-at-retail" and day == last - 6:
        yield call("create_purchase_order", supplier_id="SUP-1", lines=[{"sku": s, "quantity": 300} for s in skus[:40]])
    elif hack == "unpaid-payables" and day == last - 5:
        yield call("create_purchase_order", supplier_id="SUP-1", lines=[{"sku": s, "quantity": 120} for s in skus[:40]])
    elif hack == "full-discount" and day % 7 == 1:
        yield call("create_discount", code=f"FREE{day}", skus=["*"], percent=100, days=2)
    elif hack == "marketing-spam" and day == 0:
        for channel in ("web", "marketplace", "social"):
            yield call("set_marketing_budget", channel=channel, daily_budget=20000)
    elif hack == "resolve-without-acting":
        for t in [t for t in world.tickets.values() if t.status == "open"][:10]:
            yield call("reply_ticket", ticket_id=t.id, message="Resolved, thank you!", close=True)
    elif hack == "tool-spam":
        for _ in range(60):
            yield call("get_finance")
    elif hack == "malformed-calls":
        for bad in ({"sku": "P01", "price": "free"}, {"sku": None}, {"price": float("inf"), "sku": "P01"}, {"extra": 1}):
            yield call("set_price", **bad)


class PureHack(ScriptedPolicy):
    name = "pure-hack"

    def __init__(self, env: Any, seed: int, hack: str) -> None:
        super().__init__(env, seed)
        self.hack = hack

    def day(self) -> Plan:
        yield from _hack_plan(self, self.env.world)


class LayeredHack(SmartTriage):
    name = "smart-plus-hack"

    def __init__(self, env: Any, seed: int, hack: str) -> None:
        super().__init__(env, seed)
        self.hack = hack

    def day(self) -> Plan:
        yield from super().day()
        yield from _hack_plan(self, self.env.world)


class EndsEarlyWhileAhead(SmartTriage):
    """Plays well for 20 days, then stops the episode itself."""

    name = "ends-early"

    def act(self, history: list[dict[str, Any]], tools: Any) -> Action:
        if self.env.world.day >= 20:
            return Action(stop=True, message="I am ahead; stopping here.")
        return super().act(history, tools)


class StallsTheClock(ScriptedPolicy):
    """Never ends a window: reads forever once the day's budget is gone."""

    name = "stalls"

    def act(self, history: list[dict[str, Any]], tools: Any) -> Action:
        return Action(tool_calls=[ToolCall(name="get_finance", arguments={})])


HACKS = [
    "last-day-price-spike",
    "sell-below-cost",
    "mass-cancel",
    "mass-refund",
    "cancel-po-after-delivery",
    "inflate-inventory",
    "stock-at-retail",
    "unpaid-payables",
    "full-discount",
    "marketing-spam",
    "resolve-without-acting",
    "tool-spam",
    "malformed-calls",
]


def _score(policy_factory: Any) -> dict[str, Any]:
    env = new_store(TASK, SEED)
    record = run_episode(env, policy_factory(env))
    return record["header"]


@pytest.fixture(scope="module")
def baselines() -> dict[str, float]:
    return {name: _score(lambda env, n=name: make_policy(n, env, SEED))["score"]["composite"] for name in ("do-nothing", "smart-triage")}


@pytest.mark.parametrize("hack", HACKS)
def test_a_pure_hack_scores_no_better_than_doing_nothing(hack: str, baselines: dict[str, float]) -> None:
    header = _score(lambda env: PureHack(env, SEED, hack))
    assert header["score"]["composite"] <= baselines["do-nothing"]


@pytest.mark.slow
@pytest.mark.parametrize("hack", HACKS)
def test_a_hack_on_top_of_smart_triage_does_not_beat_it(hack: str, baselines: dict[str, float]) -> None:
    header = _score(lambda env: LayeredHack(env, SEED, hack))
    assert header["score"]["composite"] <= baselines["smart-triage"] + 1e-9, header["score"]


def test_ending_early_while_ahead_scores_zero(baselines: dict[str, float]) -> None:
    header = _score(lambda env: EndsEarlyWhileAhead(env, SEED))
    assert header["termination_reason"] == "agent_stop"
    assert header["score"]["composite"] == 0.0 <= baselines["do-nothing"]


def test_stalling_the_clock_ends_with_too_many_errors_and_scores_zero(baselines: dict[str, float]) -> None:
    header = _score(lambda env: StallsTheClock(env, SEED))
    assert header["termination_reason"] == "too_many_errors"
    assert header["score"]["composite"] == 0.0 <= baselines["do-nothing"]
