"""Engine 2.0.0's clock: the world happens at its minute, whatever way the agent spends its time."""

from __future__ import annotations

import pytest

from environments.core import ToolCall
from environments.registry import make
from environments.storebench.clock import CURVES, HOURLY, SLOTS_PER_DAY
from environments.storebench.entities import Ticket
from environments.storebench.env import StoreBenchEnv
from environments.storebench.simulation import order_fee

from .conftest import do, new_store


def _spend(env: StoreBenchEnv, minutes: int, tool: str = "get_finance", cost: int = 5) -> None:
    """Burns `minutes` of the window with reads that change nothing."""
    for _ in range(minutes // cost):
        assert not do(env, tool, **({"days": 7} if tool == "get_sales_report" else {})).is_error


def _placed(env: StoreBenchEnv) -> dict[int, tuple[int, str]]:
    rows = do(env, "list_orders", limit=200).content["orders"]
    return {o["order_id"]: (o["day"], o["time"]) for o in rows}


def test_an_order_placed_at_11_is_seen_at_11_05_but_not_at_09_05() -> None:
    late = new_store()
    _spend(late, 120)  # 09:00 -> 11:00; the list_orders call itself ends at 11:05
    seen = _placed(late)
    eleven = {oid for oid, (_, time) in seen.items() if time == "11:00"}
    assert eleven, "this seed has customers in the 11:00 slot"
    early = new_store()
    at_0905 = _placed(early)  # 09:00 -> 09:05: only the 09:00 slot has happened
    assert {time for _, time in at_0905.values()} <= {"09:00"}
    assert not eleven & set(at_0905)
    assert max(oid for oid in seen) > max(at_0905, default=0)


def test_the_schedule_does_not_depend_on_how_the_agent_chops_its_time() -> None:
    small, large, idle = new_store(), new_store(), new_store()
    _spend(small, 125, "get_finance", 5)  # 25 calls of 5 minutes
    _spend(large, 100, "get_sales_report", 10)  # 10 calls of 10 minutes, then 5 of 5
    _spend(large, 25, "get_finance", 5)
    assert small.world.minute == large.world.minute == 125
    w1, w2 = small.world, large.world
    assert [(o.id, o.sku, o.qty, o.minute) for o in w1.orders.values()] == [(o.id, o.sku, o.qty, o.minute) for o in w2.orders.values()]
    assert (w1.cash, w1.receivables, w1.ledger, w1.tickets) == (w2.cash, w2.receivables, w2.ledger, w2.tickets)
    # The rest of the day and the night: the same world whether the window was spent on reads or not at all.
    for env in (small, large, idle):
        do(env, "end_window")
    assert small.state_hash() == large.state_hash() == idle.state_hash()


def test_an_idle_agent_finds_the_day_and_the_night_in_the_morning_report() -> None:
    env = new_store()
    report = do(env, "end_window").content
    assert env.world.day == 1 and env.world.minute == 0
    assert report["new_orders"] == len(env.world.orders) > 20
    stamps = {(o.day, o.minute) for o in env.world.orders.values()}
    assert any(day == 0 and 9 * 60 <= minute < 18 * 60 for day, minute in stamps)  # the business day
    assert any(day == 0 and minute >= 18 * 60 for day, minute in stamps)  # the evening
    assert any(day == 1 and minute < 9 * 60 for day, minute in stamps)  # after midnight
    assert all(day * 1440 + minute < 1440 + 9 * 60 for day, minute in stamps)  # nothing from the future


def test_the_night_books_costs_pays_out_channels_and_keeps_night_orders_receivable() -> None:
    env = new_store()
    w = env.world
    do(env, "end_window")
    assert w.ledger.fixed == w.fixed_cost and w.ledger.days == 1 and w.ledger.marketing > 0
    assert len(w.daily_log) == 1 and w.daily_log[0]["orders"] == sum(1 for o in w.orders.values() if o.day == 0)
    # Midnight paid the day's channel takings into cash; orders after midnight are still receivable.
    night = sum(o.unit_price * o.qty - order_fee(o) for o in w.orders.values() if o.day == 1)
    assert night > 0 and w.receivables == pytest.approx(night, abs=0.01)
    assert all(len(s.sold) == 1 for s in w.skus.values())


def test_a_purchase_order_arrives_during_its_arrival_day() -> None:
    env = new_store()
    sku = next(iter(env.world.skus))
    po_id = do(env, "create_purchase_order", supplier_id="SUP-1", lines=[{"sku": sku, "quantity": 60}]).content["po_id"]
    po = env.world.pos[po_id]
    while env.world.day < po.arrival_day - 1:
        do(env, "end_window")
    _spend(env, 520, "fulfil_orders", 20)
    assert po.status == "open"  # the evening before: not yet
    do(env, "end_window")
    _spend(env, 340, "fulfil_orders", 20)  # 14:40: every delivery of the day (06:00-14:30) has arrived
    assert po.status == "delivered" and po.received[sku] > 0
    assert env.world.payables[-1].due_day == po.arrival_day + env.world.payment_terms


def test_a_supplier_fails_at_its_minute_with_an_alert_at_that_time() -> None:
    env = make("storebench/supplier-collapse", seed=1)
    assert isinstance(env, StoreBenchEnv)
    shock = env.world.shocks[0]
    shock.minute = 10 * 60  # strike at 10:00 on its day, inside the window (the day's agenda is drawn at midnight)
    while env.world.day < shock.day:
        do(env, "end_window")
    _spend(env, 55)
    assert env.world.suppliers[shock.target].status == "active"
    news = do(env, "read_news").content["items"]  # 09:55 -> 10:00: the 10:00 slot has not started yet
    assert shock.headline not in [n["text"] for n in news]
    news = do(env, "read_news").content["items"]
    assert env.world.suppliers[shock.target].status == "failed"
    assert any(n["text"] == shock.headline and (n["day"], n["time"]) == (shock.day, "10:00") for n in news)


def test_unshipped_orders_draw_complaints_and_cancellations_at_their_minute() -> None:
    env = new_store()
    for _ in range(6):
        do(env, "end_window")
    w = env.world
    late = [t for t in w.tickets.values() if t.kind == "late"]
    assert late and all(9 * 60 <= t.minute < 18 * 60 for t in late)  # customers complain in the daytime
    assert all(t.day == w.orders[t.order_id].day + 2 for t in late)  # on the day the order turned late
    assert w.ledger.units_cancelled > 0  # five days without shipping: the customer cancels
    cancelled = [o for o in w.orders.values() if o.status == "cancelled"]
    assert cancelled and all(o.cancelled_by == "customer" for o in cancelled)


def test_content_is_visible_only_once_it_has_arrived() -> None:
    """What another part may rely on: tickets and news carry (day, minute) and tools show them from then on."""
    env = new_store()
    w = env.world
    w.tickets[999] = Ticket(id=999, day=0, order_id=0, kind="question", status="open", message="Is the sand colour warm?", minute=11 * 60)
    w.news.append({"day": 0, "minute": 11 * 60, "kind": "notice", "text": "Carrier pickup moves to 16:00."})
    w.touch("tickets", "misc")
    assert 999 not in [t["ticket_id"] for t in do(env, "list_tickets").content["tickets"]]
    assert do(env, "reply_ticket", ticket_id=999, message="It is warm.").is_error  # not there yet
    assert "Carrier pickup moves to 16:00." not in [n["text"] for n in do(env, "read_news").content["items"]]
    _spend(env, 120)
    assert 999 in [t["ticket_id"] for t in do(env, "list_tickets").content["tickets"]]
    assert "Carrier pickup moves to 16:00." in [n["text"] for n in do(env, "read_news").content["items"]]


def test_the_intraday_curves_are_shares_of_the_day_peaking_as_documented() -> None:
    for channel, curve in CURVES.items():
        assert len(curve) == SLOTS_PER_DAY and abs(sum(curve) - 1.0) < 1e-9, channel
    peak = {c: max(range(24), key=lambda h, c=c: HOURLY[c][h]) for c in HOURLY}
    assert 18 <= peak["web"] <= 21 and 10 <= peak["marketplace"] <= 14 and peak["social"] >= 21


def test_two_runs_making_the_same_calls_at_the_same_minutes_are_identical_and_snapshots_resume_mid_day() -> None:
    calls = [ToolCall("fulfil_orders", {}), ToolCall("get_inventory", {}), ToolCall("end_window", {})] * 4
    a, b = new_store(seed=8), new_store(seed=8)
    for call in calls[:5]:
        a.step(call)
        b.step(call)
    blob = a.snapshot()
    for call in calls[5:]:
        a.step(call)
        b.step(call)
        assert a.state_hash() == b.state_hash()
    c = new_store(seed=8)
    c.restore(blob)
    for call in calls[5:]:
        c.step(call)
    assert c.state_hash() == a.state_hash()
