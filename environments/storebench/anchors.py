"""Scripted anchor policies for StoreBench. They use the same tools and budget as any agent.

    do-nothing     ends every window at once
    random-valid   random tools with schema-valid arguments on real ids
    naive-restock  ships orders and reorders a fixed quantity from the first supplier; ignores everything else
    smart-triage   a sensible operator: news, shipping, returns, tickets, forecast-driven purchasing, clearance
                   pricing, marketing pauses during outages, cash-aware ordering
    oracle         smart-triage that reads the hidden world (true demand, future shocks, supplier reliability,
                   elasticities): the headroom above the heuristic

Scripted policies run as generators: each yielded ToolCall receives its result content back. A policy
picked up mid-episode (resume) starts its daily routine afresh, which is a valid continuation.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.roles import ACTOR, step_role
from environments.storebench.world import derive_seed

Plan = Generator[ToolCall, Any, None]


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def last_content(history: list[Step]) -> Any:
    """The result of the actor's latest call: a team's other roles (critic, harness) may have taken turns since."""
    last = next((s for s in reversed(history) if s.get("source") == "env" or step_role(s) == ACTOR), None)
    if last is None or not last.get("results"):
        return None
    return last["results"][-1].get("content")


class ScriptedPolicy(Policy):
    """Runs `day()` as a generator each window, then ends the window."""

    kind = "scripted"

    def __init__(self, env: Env, seed: int) -> None:
        self.env = env
        self.seed = seed
        self._plan: Plan | None = None

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        if self._plan is None:
            self._plan = self._forever()
            return Action(tool_calls=[next(self._plan)])
        return Action(tool_calls=[self._plan.send(last_content(history))])

    def _forever(self) -> Plan:
        while True:
            yield from self.day()
            yield call("end_window")

    def day(self) -> Plan:
        return
        yield  # an empty generator: do-nothing ends every window at once

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "seed": self.seed}


class DoNothing(ScriptedPolicy):
    name = "do-nothing"


class RandomValid(ScriptedPolicy):
    """Uniformly random tools with valid arguments, drawing ids from what the store really has."""

    name = "random-valid"

    def __init__(self, env: Env, seed: int) -> None:
        super().__init__(env, seed)
        self.rng = random.Random(derive_seed("random-valid", seed))

    def day(self) -> Plan:
        world = self.env.world  # type: ignore[attr-defined]
        for _ in range(self.rng.randint(3, 15)):
            yield self._random_call(world)

    def _random_call(self, world: Any) -> ToolCall:
        rng = self.rng
        sku = rng.choice(sorted(world.skus))
        order_ids = sorted(world.orders) or [1000]
        supplier = rng.choice(sorted(world.suppliers))
        choices = [
            call("list_products", limit=rng.randint(1, 50)),
            call("get_product", sku=sku),
            call("set_price", sku=sku, price=round(rng.uniform(1, 150), 2)),
            call("create_discount", code=f"R{rng.randint(100, 999)}", skus=[sku], percent=rng.randint(5, 60), days=rng.randint(1, 10)),
            call("end_discount", discount_id=f"D-{rng.randint(1, 5)}"),
            call("set_product_status", sku=sku, status=rng.choice(["active", "draft", "archived"])),
            call(
                "add_product_from_supplier", supplier_id=supplier, item_id=f"CAT-{rng.randint(1, 3)}", price=round(rng.uniform(5, 120), 2)
            ),
            call("get_inventory"),
            call("adjust_inventory", sku=sku, delta=rng.randint(1, 5), reason=rng.choice(["found", "count_correction"])),
            call("list_suppliers"),
            call("request_quote", supplier_id=supplier, lines=[{"sku": sku, "quantity": rng.randint(1, 80)}]),
            call("create_purchase_order", supplier_id=supplier, lines=[{"sku": sku, "quantity": rng.randint(1, 80)}]),
            call("cancel_purchase_order", po_id=f"PO-{rng.randint(1, 20)}"),
            call("expedite_purchase_order", po_id=f"PO-{rng.randint(1, 20)}"),
            call("list_purchase_orders"),
            call("list_orders", limit=rng.randint(1, 50)),
            call("get_order", order_id=rng.choice(order_ids)),
            call("fulfil_orders", max_orders=rng.randint(1, 30)),
            call("cancel_order", order_id=rng.choice(order_ids), reason="random cancellation"),
            call("refund_order", order_id=rng.choice(order_ids), amount=round(rng.uniform(1, 30), 2), reason="random refund"),
            call("process_return", order_id=rng.choice(order_ids), decision=rng.choice(["accept", "reject"]), restock=rng.random() < 0.5),
            call("list_tickets"),
            call("reply_ticket", ticket_id=rng.randint(1, 30), message="Thanks for your message.", close=rng.random() < 0.5),
            call("set_marketing_budget", channel=rng.choice(["web", "marketplace", "social"]), daily_budget=round(rng.uniform(0, 400), 2)),
            call("get_campaign_report", days=7),
            call("get_finance"),
            call("get_sales_report", days=7, group_by="sku"),
            call("read_news"),
        ]
        return rng.choice(choices)


class NaiveRestock(ScriptedPolicy):
    name = "naive-restock"

    def day(self) -> Plan:
        yield call("fulfil_orders")
        inventory = yield call("get_inventory")
        low = [r["sku"] for r in inventory.get("inventory", []) if r["available"] + r["incoming"] < 8]
        if low:
            yield call("create_purchase_order", supplier_id="SUP-1", lines=[{"sku": s, "quantity": 25} for s in low[:60]])
