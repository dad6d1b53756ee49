"""Each shock kind's effect on the world: the same scenario and seed played with and without the shock.

The scenario is launch-week (no shocks of its own) with a fixed onset day and an explicit target, so both
stores are generated identically and differ only by the shock. Effects are read after whole days (end_window),
not from the settlement's internals: what the agent could see, or the hidden state the shock changes.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from environments.core import TaskSpec
from environments.registry import get_task
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scenario import SHOCK_KINDS, load_scenarios, validate_scenario

from .conftest import do

SEED = 5


def store(
    kind: str | None = None, *, day: int = 3, duration: int = 5, magnitude: float = 1.0, target: str = "", warning_days: int = 0
) -> StoreBenchEnv:
    """launch-week with deep stock (120 days of cover, so sales show demand, not stock-outs) and at most one shock."""
    scenario = copy.deepcopy(get_task("storebench/launch-week").spec)
    scenario["world"]["starting_cover_days"] = 120
    scenario["shocks"] = []
    if kind:
        headline = f"Headline: {kind} ahead."
        shock = {
            "kind": kind,
            "day": day,
            "duration": duration,
            "magnitude": magnitude,
            "target": target,
            "warning_days": warning_days,
            "headline": headline,
        }
        scenario["shocks"] = [shock]
    scenario = validate_scenario(scenario, "test variant")
    task = TaskSpec(env="storebench", key=scenario["key"], split="train", description="variant", version=scenario["version"], spec=scenario)
    env = StoreBenchEnv(task, SEED)
    env.reset()
    return env


def play_days(env: StoreBenchEnv, n: int) -> None:
    """Ships what can be shipped (so no order is cancelled for age) and ends the day, n times."""
    for _ in range(n):
        do(env, "fulfil_orders", max_orders=500)
        do(env, "end_window")


def sales(env: StoreBenchEnv, group_by: str, days: int) -> dict[str, int]:
    result = do(env, "get_sales_report", days=days, group_by=group_by)
    assert not result.is_error, result.content
    return {row[group_by]: row["units"] for row in result.content["rows"]}


def news(env: StoreBenchEnv) -> list[dict[str, Any]]:
    return do(env, "read_news", since_day=0).content["items"]


def place_po(env: StoreBenchEnv, supplier_id: str, units: int = 60, skus: int = 1) -> str:
    lines = [{"sku": sku, "quantity": units} for sku in list(env.world.suppliers[supplier_id].catalogue)[:skus]]
    result = do(env, "create_purchase_order", supplier_id=supplier_id, lines=lines)
    assert not result.is_error, result.content
    return str(result.content["po_id"])


def delivery_days(env: StoreBenchEnv, po_ids: list[str], *, within: int = 15) -> dict[str, int]:
    """Plays day by day until every purchase order is delivered; the day each one arrived."""
    days: dict[str, int] = {}
    for _ in range(within):
        days.update({po: env.world.day for po in po_ids if po not in days and env.world.pos[po].status == "delivered"})
        if len(days) == len(po_ids):
            return days
        play_days(env, 1)
    raise AssertionError(f"not delivered by day {env.world.day}: {sorted(set(po_ids) - set(days))}")


def delivered_day(env: StoreBenchEnv, po_id: str) -> int:
    return delivery_days(env, [po_id])[po_id]


def a_category(env: StoreBenchEnv) -> str:
    return sorted({s.category for s in env.world.skus.values()})[0]


def season_units(env: StoreBenchEnv, days: int) -> dict[str, int]:
    totals = {"summer": 0, "winter": 0, "all": 0}
    for sku, units in sales(env, "sku", days).items():
        totals[env.world.skus[sku].season] += units
    return totals


# --- supply ---------------------------------------------------------------------------------------------


def test_supplier_collapse_fails_the_supplier_and_its_open_purchase_orders() -> None:
    runs = {}
    for kind in (None, "supplier_collapse"):
        env = store(kind, day=2, duration=400, target="main_supplier")
        po_id = place_po(env, "SUP-1")
        sku = env.world.pos[po_id].lines[0][0]
        incoming = env.world.skus[sku].incoming
        play_days(env, 3)
        runs[kind] = (env, po_id, sku, incoming)
    calm, po_id, sku, incoming = runs[None]
    assert calm.world.suppliers["SUP-1"].status == "active" and calm.world.pos[po_id].status in ("open", "delivered")
    env, po_id, sku, incoming = runs["supplier_collapse"]
    assert env.world.suppliers["SUP-1"].status == "failed"
    assert env.world.pos[po_id].status == "failed"
    assert env.world.skus[sku].incoming == incoming - 60  # the failed order's units will never come
    refused = do(env, "create_purchase_order", supplier_id="SUP-1", lines=[{"sku": sku, "quantity": 60}])
    assert refused.is_error and "failed" in refused.content["error"]
    play_days(env, 6)
    assert env.world.pos[po_id].status == "failed" and env.world.pos[po_id].received == {}


def test_shipping_strike_delays_purchase_orders_and_customer_parcels_by_its_magnitude() -> None:
    arrivals, delivered_by_day_6 = {}, {}
    for kind in (None, "shipping_strike"):
        env = store(kind, day=1, duration=6, magnitude=4)
        po_id = place_po(env, "SUP-1")
        arrivals[kind] = delivered_day(env, po_id)
    for kind in (None, "shipping_strike"):
        env = store(kind, day=1, duration=6, magnitude=4)
        play_days(env, 2)  # day 2, inside the strike: ship today's orders
        shipped = [o.id for o in env.world.orders.values() if o.status == "open"]
        play_days(env, 4)
        delivered_by_day_6[kind] = sum(env.world.orders[o].status == "delivered" for o in shipped)
    assert arrivals["shipping_strike"] == arrivals[None] + 4
    assert delivered_by_day_6[None] == len(shipped) > 0 and delivered_by_day_6["shipping_strike"] == 0


def test_supplier_delays_make_the_suppliers_deliveries_late() -> None:
    late = {}
    for kind in (None, "supplier_delays"):
        env = store(kind, day=1, duration=20, magnitude=0.0, target="SUP-1")
        reliability = env.world.suppliers["SUP-1"].reliability
        play_days(env, 2)
        assert env.world.suppliers["SUP-1"].reliability == (0.0 if kind else reliability)
        pos = [place_po(env, "SUP-1") for _ in range(5)]
        etas = {po: env.world.pos[po].eta_day for po in pos}
        late[kind] = sum(day > etas[po] for po, day in delivery_days(env, pos).items())
    assert late["supplier_delays"] == 5 > late[None]


def test_cost_inflation_raises_the_targeted_catalogue_costs_from_its_day() -> None:
    calm, shocked = store(), store("cost_inflation", day=2, duration=400, magnitude=0.15, target="SUP-2")
    before = {s: dict(shocked.world.suppliers[s].catalogue) for s in shocked.world.suppliers}
    play_days(calm, 2)
    play_days(shocked, 2)
    listed = {s["supplier_id"]: s["unit_costs"] for s in do(shocked, "list_suppliers").content["suppliers"]}
    for sku, cost in before["SUP-2"].items():
        assert listed["SUP-2"][sku] == pytest.approx(cost * 1.15, abs=0.01)
        assert calm.world.suppliers["SUP-2"].catalogue[sku] == cost
    assert listed["SUP-1"] == before["SUP-1"]  # only the target's costs move


def test_quality_defect_raises_the_defect_rate_of_the_suppliers_deliveries() -> None:
    faulty = {}
    for kind in (None, "quality_defect"):
        env = store(kind, day=1, duration=10, magnitude=0.3, target="main_supplier")
        po_id = place_po(env, "SUP-1", units=20, skus=12)
        skus = {line[0] for line in env.world.pos[po_id].lines}
        delivered_day(env, po_id)
        base = env.world.suppliers["SUP-1"].defect_rate
        assert all(env.world.skus[s].defect_rate == pytest.approx(base + (0.3 if kind else 0.0)) for s in skus)
        play_days(env, 10)
        faulty[kind] = sum(t.kind == "faulty" for t in env.world.tickets.values())
    assert faulty["quality_defect"] > faulty[None] + 5


# --- demand ---------------------------------------------------------------------------------------------


def test_viral_trend_multiplies_demand_in_its_category_only() -> None:
    target = a_category(store())
    units = {}
    for kind in (None, "viral_trend"):
        env = store(kind, day=2, duration=6, magnitude=4.0, target=target)
        play_days(env, 8)
        units[kind] = sales(env, "category", 6)
    assert units["viral_trend"][target] > 2.0 * units[None][target]
    others = [c for c in units[None] if c != target]
    assert sum(units["viral_trend"][c] for c in others) < 1.3 * sum(units[None][c] for c in others)


@pytest.mark.parametrize(("kind", "up", "down"), [("heat_wave", "summer", "winter"), ("cold_snap", "winter", "summer")])
def test_weather_lifts_one_season_and_sinks_the_other(kind: str, up: str, down: str) -> None:
    units = {}
    for variant in (None, kind):
        env = store(variant, day=2, duration=6, magnitude=2.5)
        assert {"summer", "winter"} <= {s.season for s in env.world.skus.values()}, "the seed must stock both seasons"
        play_days(env, 8)
        units[variant] = season_units(env, 6)
    assert units[kind][up] > 1.6 * units[None][up]
    assert units[kind][down] < 0.7 * units[None][down]


@pytest.mark.parametrize(("kind", "magnitude"), [("holiday_peak", 2.5), ("demand_slump", 0.4)])
def test_holiday_peak_and_demand_slump_scale_all_demand(kind: str, magnitude: float) -> None:
    units = {}
    for variant in (None, kind):
        env = store(variant, day=2, duration=6, magnitude=magnitude)
        play_days(env, 8)
        units[variant] = sum(sales(env, "category", 6).values())
    ratio = units[kind] / units[None]
    assert ratio == pytest.approx(magnitude, rel=0.3)


def test_price_war_cuts_the_categorys_reference_price_and_restores_it_after() -> None:
    env = store()
    target = a_category(env)
    env = store("price_war", day=2, duration=4, magnitude=0.2, target=target)
    before = {s.id: s.ref_price for s in env.world.skus.values()}
    play_days(env, 3)  # day 3: inside the war
    for sku in env.world.skus.values():
        expected = before[sku.id] * 0.8 if sku.category == target else before[sku.id]
        assert sku.ref_price == pytest.approx(expected, abs=0.01)
    play_days(env, 4)  # day 7: the war ended on day 6
    assert all(s.ref_price == pytest.approx(before[s.id], abs=0.02) for s in env.world.skus.values())


def test_payment_outage_stops_the_channels_orders_while_it_lasts() -> None:
    env = store("payment_outage", day=2, duration=3, target="web")
    play_days(env, 2)
    lost = env.world.ledger.units_lost_outage
    play_days(env, 2)  # the web checkout is down from a minute of day 2 to the same minute of day 5
    during = sales(env, "channel", 2)  # orders of day 3 and of day 4 until 09:00: all inside the outage
    assert during.get("web", 0) == 0 and during["marketplace"] > 0
    assert env.world.ledger.units_lost_outage > lost
    play_days(env, 3)
    assert sales(env, "channel", 3)["web"] > 0


# --- warnings -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["shipping_strike", "heat_wave", "holiday_peak", "supplier_collapse"])
def test_an_announced_shock_is_in_the_news_warning_days_ahead(kind: str) -> None:
    target = "main_supplier" if kind == "supplier_collapse" else ""
    env = store(kind, day=6, duration=3, magnitude=2, target=target, warning_days=4)
    play_days(env, 1)
    assert not [n for n in news(env) if n["text"].startswith("Headline")], "nothing before the warning day"
    play_days(env, 2)
    items = [n for n in news(env) if n["text"] == f"Headline: {kind} ahead."]
    assert [(n["day"], n["kind"]) for n in items] == [(2, "news")]
    play_days(env, 5)
    assert len([n for n in news(env) if n["text"].startswith("Headline")]) == 1  # no second alert when it strikes


@pytest.mark.parametrize("kind", ["supplier_collapse", "payment_outage", "shipping_strike", "quality_defect"])
def test_an_unannounced_operational_shock_raises_an_alert_on_its_day(kind: str) -> None:
    target = {"supplier_collapse": "main_supplier", "quality_defect": "main_supplier", "payment_outage": "web"}.get(kind, "")
    env = store(kind, day=3, duration=3, magnitude=1, target=target)
    play_days(env, 2)
    assert not [n for n in news(env) if n["text"].startswith("Headline")]
    play_days(env, 2)
    items = [n for n in news(env) if n["text"].startswith("Headline")]
    assert [(n["day"], n["kind"]) for n in items] == [(3, "alert")]


@pytest.mark.parametrize(
    ("kind", "target"), [("price_war", "tops"), ("supplier_delays", "SUP-1"), ("viral_trend", "tops"), ("demand_slump", "")]
)
def test_an_unannounced_market_shock_must_be_read_from_the_data(kind: str, target: str) -> None:
    env = store(kind, day=2, duration=3, magnitude=0.5, target=target)
    play_days(env, 6)
    assert not [n for n in news(env) if n["text"].startswith("Headline")]


def test_every_shock_kind_appears_in_at_least_one_scenario() -> None:
    used = {shock["kind"] for scenario in load_scenarios() for shock in scenario["shocks"]}
    assert used == set(SHOCK_KINDS), f"unused kinds: {sorted(set(SHOCK_KINDS) - used)}"
