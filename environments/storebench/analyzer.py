"""The StoreBench step analyzer: rules over the step's call, result and the tool results seen before it
(environments.analyzers). Every rule that fires adds its guidance; the step's value is the lowest of theirs.

Rules
    a failed call (its error)                                                                  value 0
    the same call three times in a row                                                         value 0.2
    set_price below the SKU's unit cost (the cheapest cost the agent has seen for it:
        get_product, quotes, purchase orders, list_suppliers)                                   value 0.1
    set_price of SKUs whose cost the agent has never read                                      value 0.6
    end_window while the latest inventory read this day showed active SKUs out of stock with
        nothing incoming and no purchase order placed since ("ends the day on a stockout")      value 0.3
    end_window whose brief reports units lost to stockouts                                     value 0.4
    end_window without fulfil_orders on a day that began with open orders (they turn late)     value 0.5
    anything else                                                                              value 1
"""

from __future__ import annotations

import json
from typing import Any

from environments.analyzers import NO_PROBLEM, GenericAnalyzer, StepAnalysis, is_actor_step
from environments.records import Step, ToolCallDict, call_arguments
from environments.rule_critic import env_calls


def result_objects(step: Step) -> list[dict[str, Any]]:
    """The step's successful results whose content is a JSON object (stored as a dict or as JSON text)."""
    found = []
    for result in step.get("results") or []:
        content = result.get("content")
        if isinstance(content, str) and content.startswith("{"):
            content = json.loads(content)
        if isinstance(content, dict) and not result.get("is_error"):
            found.append(content)
    return found


def known_costs(history: list[Step]) -> dict[str, float]:
    """SKU -> the cheapest unit cost any earlier result showed the agent."""
    costs: dict[str, float] = {}

    def note(sku: Any, cost: Any) -> None:
        if isinstance(sku, str) and isinstance(cost, int | float):
            costs[sku] = min(costs.get(sku, float(cost)), float(cost))

    for step in history:
        for content in result_objects(step):
            note(content.get("sku"), content.get("unit_cost"))
            for line in content.get("lines") or []:
                if isinstance(line, dict):
                    note(line.get("sku"), line.get("unit_cost"))
            for supplier in content.get("suppliers") or []:
                for sku, cost in (supplier.get("unit_costs") or {}).items() if isinstance(supplier, dict) else ():
                    note(sku, cost)
    return costs


def stockouts_left(history: list[Step]) -> list[str]:
    """Active SKUs the day's latest inventory read showed out of stock with nothing incoming, unless a purchase
    order was placed after that read."""
    for step in reversed([s for s in history if is_actor_step(s)]):
        names = {c.get("name") for c in env_calls(step)}
        if "end_window" in names or "create_purchase_order" in names:
            return []
        for content in result_objects(step):
            rows = content.get("inventory")
            if isinstance(rows, list):
                return [
                    str(r["sku"])
                    for r in rows
                    if isinstance(r, dict) and r.get("status") == "active" and (r.get("available") or 0) <= 0 and not r.get("incoming")
                ]
    return []


def orders_left_unshipped(history: list[Step]) -> int:
    """The open orders the previous end_window reported, when no fulfil_orders call came after it (0 otherwise,
    and 0 on the first day, whose open orders the agent has not been told)."""
    for step in reversed([s for s in history if is_actor_step(s)]):
        names = {c.get("name") for c in env_calls(step)}
        if "fulfil_orders" in names:
            return 0
        if "end_window" in names:
            return int(next((b.get("open_orders") or 0 for b in result_objects(step) if "open_orders" in b), 0))
    return 0


class StoreBenchAnalyzer:
    def analyze(self, history: list[Step], step: Step) -> StepAnalysis:
        generic = GenericAnalyzer().analyze(history, step)  # a failed or repeated call says all there is to say
        if generic.value < 1.0:
            return generic
        findings: list[tuple[str, float]] = []
        for call in env_calls(step):
            if call.get("name") == "set_price":
                findings += self._price(history, step, call)
            elif call.get("name") == "end_window":
                findings += self._day_end(history, step)
        if not findings:
            return StepAnalysis(NO_PROBLEM, 1.0)
        return StepAnalysis(" ".join(text for text, _ in findings), min(value for _, value in findings))

    def _price(self, history: list[Step], step: Step, call: ToolCallDict) -> list[tuple[str, float]]:
        price = float(call_arguments(call).get("price") or 0.0)
        updated = [str(s) for content in result_objects(step) for s in content.get("updated") or []]
        costs = known_costs(history)
        below = [f"{sku} (cost {costs[sku]:.2f})" for sku in updated if sku in costs and price < costs[sku]]
        if below:
            return [(f"The price {price:.2f} is below the unit cost of {', '.join(below[:4])}: every sale loses money.", 0.1)]
        unknown = [sku for sku in updated if sku not in costs]
        if unknown:
            return [(f"You priced {', '.join(unknown[:4])} without reading its unit cost: call get_product first.", 0.6)]
        return []

    def _day_end(self, history: list[Step], step: Step) -> list[tuple[str, float]]:
        findings = []
        empty = stockouts_left(history)
        if empty:
            findings.append((f"You ended the day with {', '.join(empty[:4])} out of stock and nothing incoming: reorder first.", 0.3))
        waiting = orders_left_unshipped(history)
        if waiting:
            findings.append((f"The day began with {waiting} open orders and you ended it without fulfil_orders: they turn late.", 0.5))
        for brief in result_objects(step):
            lost = brief.get("units_lost_to_stockouts") or 0
            if lost:
                findings.append(
                    (
                        f"{lost} unit{'s were' if lost != 1 else ' was'} lost to stockouts: check get_inventory and reorder low-cover SKUs.",
                        0.4,
                    )
                )
        return findings
