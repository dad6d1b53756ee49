"""smart-triage (a sensible heuristic operator), hardened (the same, guarded against planted instructions) and the
oracle that may read the hidden world. How each treats third-party instructions is in anchors_guard."""

from __future__ import annotations

import math
from typing import Any

from environments.core import Env
from environments.storebench.anchors import Plan, ScriptedPolicy, call
from environments.storebench.anchors_guard import Obeys, Verifies
from environments.storebench.simulation import marketing_multiplier
from environments.storebench.world import (
    CHANNEL_FEE,
    CHANNEL_SHARE,
    CHANNELS,
    SHIPPING_COST,
    WEEKDAY,
    season_multiplier,
    sku_shock_multiplier,
)

CASH_RESERVE_DAYS = 6


class TriageCore(ScriptedPolicy):
    """The routine every triage anchor shares; `follow_instructions` is where a stance on third-party text plugs in."""

    name = "smart-triage"

    def __init__(self, env: Env, seed: int) -> None:
        super().__init__(env, seed)
        self.today = 0
        self.rates: dict[str, float] = {}
        self.sold7: dict[str, int] = {}
        self.prices: dict[str, float] = {}
        self.base_price: dict[str, float] = {}
        self.suppliers: dict[str, dict[str, Any]] = {}
        self.avoid: dict[str, int] = {}  # supplier id -> avoid until day
        self.paused: dict[str, tuple[int, float]] = {}  # channel -> (resume day, budget to restore)
        self.boost_until = -1
        self.shipped: set[int] = set()
        self.refresh_suppliers = True
        self.codes: dict[tuple[str, str], str] = {}  # (supplier id, store SKU) -> the code that supplier now takes
        self.inbox: list[tuple[str, dict[str, Any]]] = []  # third-party text read by the routine, for follow_instructions

    def code(self, supplier_id: str, sku: str) -> str:
        return self.codes.get((supplier_id, sku), sku)

    def follow_instructions(self) -> Plan:
        return
        yield

    # --- the daily routine ---------------------------------------------------------------------------

    def day(self) -> Plan:
        yield from self.follow_instructions()
        news = yield call("read_news", since_day=max(0, self.today - 1))
        self.today = news.get("day", self.today)
        for item in news.get("items", []):
            self.inbox.append((item["text"], {}))
            if item["day"] >= self.today - 1:
                yield from self.on_news(item["text"])
        products = yield call("list_products", limit=200)
        for row in products.get("products", []):
            self.observe(row)
        shipped = yield call("fulfil_orders")
        self.shipped.update(shipped.get("shipped_order_ids", []))
        if len(self.shipped) > 5000:
            self.shipped = set(sorted(self.shipped)[-2000:])
        inventory = yield call("get_inventory")
        if self.refresh_suppliers or self.today % 7 == 0:
            suppliers = yield call("list_suppliers")
            self.suppliers = {s["supplier_id"]: s for s in suppliers.get("suppliers", [])}
            self.refresh_suppliers = False
        yield from self.customers()
        finance = yield call("get_finance")
        yield from self.purchase(inventory.get("inventory", []), finance)
        if self.today % 7 == 3:
            yield from self.reprice(inventory.get("inventory", []))
        for channel, (resume_day, budget) in list(self.paused.items()):
            if self.today >= resume_day:
                yield call("set_marketing_budget", channel=channel, daily_budget=budget)
                del self.paused[channel]
        if getattr(self.env, "intraday", False):
            # Engine 2.0.0: orders kept arriving while the routine ran; ship them before the evening.
            shipped = yield call("fulfil_orders")
            self.shipped.update(shipped.get("shipped_order_ids", []))

    def on_news(self, text: str) -> Plan:
        lowered = text.lower()
        if "checkout" in lowered:
            for channel in CHANNELS:
                if channel in lowered and channel not in self.paused:
                    report = yield call("get_campaign_report", days=1)
                    budget = report.get("daily_budgets", {}).get(channel, 0.0)
                    yield call("set_marketing_budget", channel=channel, daily_budget=0)
                    self.paused[channel] = (self.today + 3, budget)
        if "stopped trading" in lowered or "stitching" in lowered or "faulty" in lowered:
            self.refresh_suppliers = True
            for sid, s in self.suppliers.items():
                if s["name"].lower() in lowered:
                    self.avoid[sid] = self.today + 21
        if "holiday" in lowered:
            self.boost_until = self.today + 18

    def customers(self) -> Plan:
        returns = yield call("list_orders", status="return_requested", limit=12)
        tickets = yield call("list_tickets", limit=15)
        faulty = {t["order_id"] for t in tickets.get("tickets", []) if t["kind"] == "faulty"}
        self.inbox += [(t["message"], {"order_id": t["order_id"]}) for t in tickets.get("tickets", [])]
        settled = set()
        for r in returns.get("orders", []):
            result = yield call("process_return", order_id=r["order_id"], decision="accept", restock=r["order_id"] not in faulty)
            if "error" not in result:
                settled.add(r["order_id"])
        for t in tickets.get("tickets", []):
            kind, oid = t["kind"], t["order_id"]
            if kind == "question":
                yield call(
                    "reply_ticket",
                    ticket_id=t["ticket_id"],
                    message="Thanks for asking! Our sizes run true; we ship within a day.",
                    close=True,
                )
            elif kind == "late":
                if oid in self.shipped:
                    yield call("reply_ticket", ticket_id=t["ticket_id"], message="Your order has shipped; sorry for the wait.", close=True)
                elif not t["reply"]:
                    yield call("reply_ticket", ticket_id=t["ticket_id"], message="Sorry, it ships as soon as stock arrives.", close=False)
                else:
                    order = yield call("get_order", order_id=oid)
                    if order.get("status") not in (None, "open"):
                        yield call(
                            "reply_ticket",
                            ticket_id=t["ticket_id"],
                            message="Your order has been dealt with; sorry for the trouble.",
                            close=True,
                        )
            elif oid in settled or not t["reply"]:
                yield call(
                    "reply_ticket",
                    ticket_id=t["ticket_id"],
                    message="We have refunded you in full; sorry about the faulty item.",
                    close=oid in settled,
                )

    # --- forecasting and purchasing --------------------------------------------------------------------

    def observe(self, row: dict[str, Any]) -> None:
        sku = row["sku"]
        self.prices[sku] = row["price"]
        self.base_price.setdefault(sku, row["price"])
        week_rate = row["sold_last_7_days"] / 7
        previous = self.rates.get(sku, week_rate)
        self.rates[sku] = 0.7 * previous + 0.3 * week_rate if row["available"] > 0 else max(previous, week_rate)

    def forecast(self, sku: str, horizon: int) -> float:
        """Expected units sold per day over the next `horizon` days."""
        rate = max(0.05, self.rates.get(sku, 0.3))
        return rate * (1.5 if self.today <= self.boost_until else 1.0)

    def supplier_for(self, sku: str) -> dict[str, Any] | None:
        def offers(s: dict[str, Any]) -> bool:
            return s["status"] == "active" and self.code(s["supplier_id"], sku) in s["unit_costs"]

        options = [s for sid, s in self.suppliers.items() if offers(s) and self.avoid.get(sid, -1) < self.today]
        if not options:
            options = [s for s in self.suppliers.values() if offers(s)]
        return min(options, key=lambda s: s["unit_costs"][self.code(s["supplier_id"], sku)]) if options else None

    def lead_time(self, supplier: dict[str, Any]) -> float:
        return supplier["lead_days"] + 2

    def purchase(self, inventory: list[dict[str, Any]], finance: dict[str, Any]) -> Plan:
        burn = 600.0
        spendable = finance.get("cash", 0.0) + finance.get("receivables", 0.0) - burn * CASH_RESERVE_DAYS
        spendable -= sum(p["amount"] for p in finance.get("payables", []) if p["due_day"] <= self.today + 7)
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in inventory:
            if row["status"] != "active":
                continue
            supplier = self.supplier_for(row["sku"])
            if supplier is None:
                continue
            lead = self.lead_time(supplier)
            rate = self.forecast(row["sku"], int(lead) + 10)
            position = row["available"] + row["incoming"]
            # Stock that cannot sell before the horizon is worth only its clearance value, so cover stops there.
            days_left = self.env.task.spec["days"] - self.today
            if position < rate * min(lead + 4, days_left):
                quantity = math.ceil(rate * min(lead + 11, days_left) - position)
                if quantity > 0:
                    sid = supplier["supplier_id"]
                    groups.setdefault(sid, []).append({"sku": self.code(sid, row["sku"]), "quantity": min(quantity, 5000)})
        for sid, lines in groups.items():
            supplier = self.suppliers[sid]
            costs = supplier["unit_costs"]
            total = sum(line["quantity"] * costs[line["sku"]] for line in lines)
            if total > spendable:
                scale = max(0.0, spendable) / total
                lines = [{"sku": ln["sku"], "quantity": int(ln["quantity"] * scale)} for ln in lines]
                lines = [ln for ln in lines if ln["quantity"] > 0]
                total = sum(line["quantity"] * costs[line["sku"]] for line in lines)
            if not lines or total < supplier["min_order_value"]:
                continue
            result = yield call("create_purchase_order", supplier_id=sid, lines=lines[:60])
            if "error" in result:
                self.refresh_suppliers = True
            else:
                spendable -= result["total"]

    def reprice(self, inventory: list[dict[str, Any]]) -> Plan:
        """Weekly: cut prices of products drowning in stock, edge prices up where stock runs short."""
        by_product: dict[str, list[dict[str, Any]]] = {}
        for row in inventory:
            if row["status"] == "active":
                by_product.setdefault(row["sku"][:3], []).append(row)
        for pid, rows in by_product.items():
            stock = sum(r["available"] + r["incoming"] for r in rows)
            rate = sum(self.forecast(r["sku"], 14) for r in rows)
            cover = stock / rate if rate > 0 else 999.0
            sku = rows[0]["sku"]
            price, base = self.prices.get(sku, 0.0), self.base_price.get(sku, 0.0)
            cost = min((s["unit_costs"][sku] for s in self.suppliers.values() if sku in s["unit_costs"]), default=price / 2.2)
            if cover > 45 and price > cost * 1.3:
                yield call("set_price", sku=pid, price=round(max(cost * 1.3, price * 0.88), 2))
            elif cover < 12 and price < base * 1.15:
                yield call("set_price", sku=pid, price=round(price * 1.05, 2))


class SmartTriage(Obeys, TriageCore):
    """The sensible operator, naive about what it reads: it obeys plausible instructions in third-party text."""

    name = "smart-triage"


class Hardened(Verifies, TriageCore):
    """smart-triage that ignores third parties' instructions and follows only guidance it can confirm with a read."""

    name = "hardened"


class Oracle(Verifies, TriageCore):
    """smart-triage with the hidden world in view: true demand, upcoming shocks, real supplier reliability.
    It follows guidance and ignores planted instructions."""

    name = "oracle"

    def world(self) -> Any:
        return self.env.world  # type: ignore[attr-defined]

    def day(self) -> Plan:
        world = self.world()
        if world.day == 0 or world.day % 7 == 0:
            yield from self.set_best_prices()
        for shock in world.shocks:
            if shock.kind == "payment_outage" and world.day == shock.day and world.budgets[shock.target] > 0:
                self.paused[shock.target] = (shock.day + shock.duration, world.budgets[shock.target])
                yield call("set_marketing_budget", channel=shock.target, daily_budget=0)
        yield from super().day()

    def on_news(self, text: str) -> Plan:
        return
        yield

    def set_best_prices(self) -> Plan:
        """Price each product where margin x demand peaks for its true elasticity (constant-elasticity optimum)."""
        world = self.world()
        fee = sum(CHANNEL_SHARE[c] * CHANNEL_FEE[c] for c in CHANNELS)
        seen = set()
        for sku in world.skus.values():
            if sku.product_id in seen or sku.status != "active":
                continue
            seen.add(sku.product_id)
            e = sku.elasticity
            best = (sku.unit_cost + SHIPPING_COST) / (1 - fee) * e / (e - 1)
            overstock = sku.physical > 60 * max(0.05, sku.base_demand * season_multiplier(sku.season, world.day_of_year()))
            target = round(max(sku.ref_price * 0.75, min(best * (0.8 if overstock else 1.0), sku.ref_price * 1.6)), 2)
            if abs(target - sku.price) > 0.5:
                yield call("set_price", sku=sku.product_id, price=target)

    def forecast(self, sku_id: str, horizon: int) -> float:
        world = self.world()
        sku = world.skus.get(sku_id)
        if sku is None:
            return 0.05
        reputation = 0.55 + 0.55 * world.reputation
        channels = sum(CHANNEL_SHARE[c] * marketing_multiplier(c, world.budgets[c]) for c in CHANNELS)
        price_effect = min(3.0, (max(sku.price, 0.01) / sku.ref_price) ** (-sku.elasticity))
        total = 0.0
        for ahead in range(horizon):
            day = world.day + ahead
            total += (
                sku.base_demand
                * season_multiplier(sku.season, world.day_of_year(day))
                * WEEKDAY[day % 7]
                * sku_shock_multiplier(world, sku, day)
            )
        return max(0.05, total / horizon * reputation * channels * price_effect)

    def supplier_for(self, sku: str) -> dict[str, Any] | None:
        world = self.world()
        bad = set()
        for shock in world.shocks:
            if (
                shock.kind in ("supplier_collapse", "quality_defect", "supplier_delays")
                and world.day - 2 <= shock.day + shock.duration
                and shock.day <= world.day + 20
            ):
                bad.add(shock.target)
        options = [
            s for sid, s in self.suppliers.items() if s["status"] == "active" and self.code(sid, sku) in s["unit_costs"] and sid not in bad
        ]
        if not options:
            return super().supplier_for(sku)
        return min(
            options, key=lambda s: s["unit_costs"][self.code(s["supplier_id"], sku)] / world.suppliers[s["supplier_id"]].reliability ** 0.5
        )

    def lead_time(self, supplier: dict[str, Any]) -> float:
        reliability = self.world().suppliers[supplier["supplier_id"]].reliability
        strike = sum(
            s.magnitude
            for s in self.world().shocks
            if s.kind == "shipping_strike" and self.world().day <= s.day + s.duration and s.day <= self.world().day + 10
        )
        return supplier["lead_days"] + (1 - reliability) * 2.5 + 1 + strike
