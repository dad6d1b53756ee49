from __future__ import annotations

import json
from typing import Any

from environments.analyzers import analyze_record
from environments.registry import make
from environments.runner import make_policy, run_episode
from environments.storebench.analyzer import StoreBenchAnalyzer
from environments.trajectory import make_step

OBSERVATION = make_step(index=0, source="env", message="Day 1 of 30. You run the store.")


def _call(index: int, name: str, arguments: dict[str, Any], content: Any, *, is_error: bool = False) -> dict[str, Any]:
    return make_step(
        index=index,
        tool_calls=[{"id": f"c{index}", "name": name, "arguments": arguments}],
        results=[{"call_id": f"c{index}", "content": content, "is_error": is_error}],
    )


def _analyze(*steps: dict[str, Any]):
    return StoreBenchAnalyzer().analyze([OBSERVATION, *steps[:-1]], steps[-1])


def _product(index: int, sku: str, cost: float) -> dict[str, Any]:
    return _call(index, "get_product", {"sku": sku}, {"sku": sku, "price": 30.0, "unit_cost": cost})


def _set_price(index: int, sku: str, price: float) -> dict[str, Any]:
    return _call(index, "set_price", {"sku": sku, "price": price}, {"updated": [sku], "price": price})


def _end_window(index: int, **brief: Any) -> dict[str, Any]:
    return _call(index, "end_window", {}, {"day": 2, "open_orders": 0, "units_lost_to_stockouts": 0, **brief})


def test_a_price_below_the_seen_unit_cost_is_flagged_with_the_cost():
    below = _analyze(_product(1, "P01-BLA-M", 12.5), _set_price(2, "P01-BLA-M", 10.0))
    assert below.value == 0.1 and "P01-BLA-M (cost 12.50)" in below.guidance
    assert _analyze(_product(1, "P01-BLA-M", 12.5), _set_price(2, "P01-BLA-M", 19.0)).value == 1.0


def test_pricing_without_reading_the_cost_is_a_mild_problem():
    unknown = _analyze(_set_price(1, "P01-BLA-M", 10.0))
    assert unknown.value == 0.6 and "get_product" in unknown.guidance


def test_the_cheapest_cost_seen_anywhere_counts():
    suppliers = _call(1, "list_suppliers", {}, {"suppliers": [{"supplier_id": "SUP-1", "unit_costs": {"P02-RED-S": 8.0}}]})
    quote = _call(2, "request_quote", {}, json.dumps({"lines": [{"sku": "P02-RED-S", "quantity": 5, "unit_cost": 9.0}]}))
    assert _analyze(suppliers, quote, _set_price(3, "P02-RED-S", 8.5)).value == 1.0  # above the cheapest (8.0)
    assert _analyze(suppliers, quote, _set_price(3, "P02-RED-S", 7.5)).value == 0.1


def test_ending_the_day_on_a_stockout_with_nothing_incoming_is_flagged_unless_reordered():
    inventory = _call(
        1,
        "get_inventory",
        {},
        {
            "inventory": [
                {"sku": "P01-BLA-M", "status": "active", "available": 0, "incoming": 0},
                {"sku": "P01-BLA-L", "status": "active", "available": 0, "incoming": 12},
                {"sku": "P03-RED-S", "status": "archived", "available": 0, "incoming": 0},
                {"sku": "P04-RED-S", "status": "active", "available": 5, "incoming": 0},
            ]
        },
    )
    flagged = _analyze(inventory, _end_window(2))
    assert flagged.value == 0.3 and "P01-BLA-M out of stock" in flagged.guidance and "P01-BLA-L" not in flagged.guidance
    ordered = _call(2, "create_purchase_order", {"supplier_id": "SUP-1"}, {"po_id": "PO-1", "lines": []})
    assert _analyze(inventory, ordered, _end_window(3)).value == 1.0


def test_lost_units_and_unshipped_orders_lower_the_day_end_and_the_lowest_value_wins():
    lost = _analyze(_end_window(1, units_lost_to_stockouts=3))
    assert lost.value == 0.4 and "3 units were lost" in lost.guidance
    previous = _end_window(1, open_orders=7)
    both = _analyze(previous, _end_window(2, units_lost_to_stockouts=1))
    assert both.value == 0.4 and "7 open orders" in both.guidance and "1 unit was lost" in both.guidance
    shipped = _call(2, "fulfil_orders", {}, {"shipped": 7})
    assert _analyze(previous, shipped, _end_window(3)).value == 1.0


def test_errors_and_repeated_calls():
    failed = _analyze(_call(1, "get_order", {"order_id": 9}, {"error": "order_id: unknown order 9"}, is_error=True))
    assert failed.value == 0.0 and "unknown order 9" in failed.guidance
    read = [_call(i, "get_finance", {}, {"cash": 100}) for i in (1, 2, 3)]
    assert _analyze(*read[:2]).value == 1.0
    assert _analyze(*read).value == 0.2


def test_a_real_episode_is_analyzed_deterministically_with_values_in_range():
    env = make("storebench/heat-wave", 7)
    record = run_episode(env, make_policy("random-valid", env, 7), max_steps=150)
    analyses = analyze_record(record)
    assert len(analyses) == sum(1 for s in record["steps"] if s["source"] == "agent")
    assert analyses == analyze_record(json.loads(json.dumps(record)))
    values = {a.value for _, a in analyses}
    assert 0.0 in values and 1.0 in values and values <= {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0}
