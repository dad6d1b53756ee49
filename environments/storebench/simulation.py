"""Engine 1.0.0's overnight settlement, and the world rules engine 2.0.0's clock (clock.py) shares with it.

In engine 1.0.0 `settle_day(world)` is the only transition not driven by a tool. Order of operations each night: cash
settles, customers order, orders age (late, cancelled, delivered, returned), purchase orders arrive,
tickets age, costs and payables are booked, suppliers drift, then the next day starts and shocks strike.
This is O(open orders + SKUs) per night; a full year settles in well under a second.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import random
from typing import Any

from environments.storebench.entities import Order, Payable, Ticket
from environments.storebench.world import (
    AUTO_CANCEL_AFTER_DAYS,
    CHANNEL_FEE,
    CHANNEL_SHARE,
    CHANNELS,
    LATE_AFTER_DAYS,
    MARKETING_SCALE,
    RETURN_WINDOW_DAYS,
    WEEKDAY,
    World,
    season_multiplier,
    sku_shock_multiplier,
)

NEWS_NOISE = (
    "Cotton futures close the week flat.",
    "Fashion week recap: earth tones and relaxed fits.",
    "Parcel carriers report normal volumes.",
    "Consumer confidence index edges up slightly.",
    "A rival boutique opens a second store downtown.",
    "Polyester prices steady as refineries resume output.",
)


def poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:  # normal approximation; exactness in the tail does not matter here
        return max(0, int(round(rng.gauss(lam, math.sqrt(lam)))))
    limit = math.exp(-lam)
    k, p = 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def marketing_multiplier(channel: str, budget: float) -> float:
    return 0.75 + 0.55 * (1.0 - math.exp(-budget / MARKETING_SCALE[channel]))


def new_brief() -> dict[str, Any]:
    """An empty briefing: what a day's (or, intraday, a slot's) events are counted into."""
    return {
        "new_orders": 0,
        "units_lost_to_stockouts": 0,
        "deliveries": [],
        "customer_cancellations": 0,
        "new_tickets": 0,
        "return_requests": 0,
    }


def settle_day(world: World) -> dict[str, Any]:
    """Advance the world from the end of `world.day` to the start of the next day; returns a briefing."""
    assert not world.finished, "settle_day called after the episode ended"
    brief = new_brief()
    world.cash = round(world.cash + world.receivables, 2)
    world.receivables = 0.0
    if world.day + 1 < world.days:  # the store closes at the horizon: no orders arrive that nobody could ship
        _customer_demand(world, brief)
    _age_orders(world, brief)
    _deliver_purchase_orders(world, brief)
    age_tickets(world, brief)
    book_costs(world)
    pay_suppliers(world)
    _drift(world)
    archive(world)
    check_solvency(world)
    world.day += 1
    world.minute = 0
    world.ops_used = 0
    _start_day(world, brief)
    if world.day >= world.days and not world.bankrupt:
        world.finished = True
    world.touch_all(keep_orders=True)  # settlement touches each order it changes
    return brief


def _customer_demand(world: World, brief: dict[str, Any]) -> None:
    rng = world.rng["demand"]
    doy = world.day_of_year()
    weekday = WEEKDAY[world.day % 7]
    reputation = 0.55 + 0.55 * world.reputation
    outage = {s.target for s in world.shock_active("payment_outage")}
    channel_mult = {c: CHANNEL_SHARE[c] * marketing_multiplier(c, world.budgets[c]) for c in CHANNELS}
    seasons = {s: season_multiplier(s, doy) for s in ("summer", "winter", "all")}
    revenue = 0.0
    units_today = 0
    for sku in world.skus.values():
        if sku.status != "active":
            sku.sold.append(0)
            continue
        price = round(sku.price * (1.0 - world.active_discount(sku.id) / 100.0), 2)
        ratio = max(price, 0.01) / sku.ref_price
        price_effect = min(3.0, ratio ** (-sku.elasticity))
        base = sku.base_demand * seasons[sku.season] * weekday * price_effect * reputation * sku_shock_multiplier(world, sku, world.day)
        sold = 0
        for channel in CHANNELS:
            n = poisson(rng, base * channel_mult[channel])
            for _ in range(n):
                qty = 2 if rng.random() < 0.08 else 1
                oid = place_order(world, brief, sku=sku, channel=channel, qty=qty, price=price, day=world.day + 1, outage=outage)
                if oid is None:
                    continue
                world.touch_orders((oid,))
                revenue += price * qty
                sold += qty
        sku.sold.append(sold)
        units_today += sold
        if len(sku.sold) > 120:
            del sku.sold[0]
    world.daily_log.append(
        {"day": world.day, "revenue": round(revenue, 2), "units": units_today, "orders": brief["new_orders"], "cash": world.cash}
    )
    world.marketing_log.append({"day": world.day, "spend": dict(world.budgets), "outage": sorted(outage)})
    for log in (world.daily_log, world.marketing_log):
        if len(log) > 120:
            del log[0]


def place_order(
    world: World, brief: dict[str, Any], *, sku: Any, channel: str, qty: int, price: float, day: int, outage: set[str], minute: int = -1
) -> int | None:
    """One customer's order as it reaches the store (both engines): lost to an outage or a stock-out, or
    placed, reserved and booked (paid now, the channel's fee kept). The new order's id, or None when lost."""
    ledger = world.ledger
    ledger.units_demanded += qty
    if channel in outage:
        ledger.units_lost_outage += qty
        return None
    if sku.on_hand - sku.reserved < qty:
        ledger.units_lost_stockout += qty
        brief["units_lost_to_stockouts"] += qty
        return None
    oid = world.next_id("order")
    world.add_order(Order(id=oid, day=day, channel=channel, sku=sku.id, qty=qty, unit_price=price, status="open", minute=minute))
    sku.reserved += qty
    gross = price * qty
    fee = round(gross * CHANNEL_FEE[channel], 2)  # the same amount as order_fee()
    world.receivables = round(world.receivables + gross - fee, 2)
    ledger.revenue = round(ledger.revenue + gross, 2)
    ledger.fees = round(ledger.fees + fee, 2)
    ledger.units_ordered += qty
    brief["new_orders"] += 1
    return oid


def _new_ticket(world: World, order_id: int, kind: str, message: str, brief: dict[str, Any]) -> None:
    tid = world.next_id("ticket")
    world.tickets[tid] = Ticket(id=tid, day=world.day + 1, order_id=order_id, kind=kind, status="open", message=message)
    brief["new_tickets"] += 1


def _age_orders(world: World, brief: dict[str, Any]) -> None:
    d = world.day
    rng = world.rng["returns"]
    trng = world.rng["tickets"]
    strike = sum(int(s.magnitude) for s in world.shock_active("shipping_strike"))
    settled: list[float] = []
    for o in world.orders.values():
        if o.status == "open":
            age = d - o.day
            if age >= AUTO_CANCEL_AFTER_DAYS - 1:
                cancel_order(world, o, by="customer")
                brief["customer_cancellations"] += 1
                settled.append(o.satisfaction)
            elif age == LATE_AFTER_DAYS and trng.random() < 0.5:
                _new_ticket(world, o.id, "late", f"Order {o.id} has not shipped yet. Where is it?", brief)
        elif o.status == "shipped" and d >= o.ship_day + 2 + strike:
            world.touch_orders((o.id,))
            world.set_order_status(o, "delivered")
            o.delivered_day = d
            o.satisfaction = 0.6 if o.late else 1.0
            settled.append(o.satisfaction)
            if o.faulty and rng.random() < 0.85:
                o.return_day = d + rng.randint(1, 3)
            elif rng.random() < world.return_rate:
                o.return_day = d + rng.randint(2, 10)
        if o.status == "delivered" and o.return_day == d and o.return_status == "none":
            world.touch_orders((o.id,))
            o.return_status = "requested"
            brief["return_requests"] += 1
            if o.faulty:
                _new_ticket(world, o.id, "faulty", f"The item from order {o.id} arrived faulty. I want my money back.", brief)
        elif o.return_status == "requested" and d - o.return_day >= 7:
            chargeback(world, o)
    if settled:
        world.reputation = round(0.9 * world.reputation + 0.1 * (sum(settled) / len(settled)), 4)
    n_questions = sum(1 for _ in range(4) if trng.random() < world.question_rate)
    for _ in range(n_questions):
        _new_ticket(
            world,
            0,
            "question",
            trng.choice(("Does this run true to size?", "Do you ship abroad?", "Can I change my delivery address?")),
            brief,
        )


def chargeback(world: World, o: Order) -> None:
    """A return request left unanswered for a week: the payment provider sides with the customer, with a fee."""
    world.touch_orders((o.id,))
    refund_amount = o.unit_price * o.qty - o.refunded
    world.post("refunds", refund_amount)
    world.post("late_fees", 15.0)
    o.refunded += refund_amount
    o.return_status = "accepted"
    o.satisfaction = 0.3


def order_fee(o: Order) -> float:
    return round(o.unit_price * o.qty * CHANNEL_FEE[o.channel], 2)


def cancel_order(world: World, o: Order, *, by: str) -> None:
    """Cancels an open order and refunds what the customer paid (the channel keeps its fee)."""
    assert o.status == "open", f"order {o.id} is {o.status}, only open orders cancel"
    world.touch_orders((o.id,))
    amount = o.unit_price * o.qty - o.refunded
    world.post("refunds", amount)
    world.post("fees", -order_fee(o))  # channels return their fee on a sale cancelled before it shipped
    o.refunded += amount
    world.set_order_status(o, "cancelled")
    o.cancelled_by = by
    o.satisfaction = 0.0 if by == "customer" else 0.2
    world.skus[o.sku].reserved -= o.qty
    world.ledger.units_cancelled += o.qty


def _deliver_purchase_orders(world: World, brief: dict[str, Any]) -> None:
    rng = world.rng["suppliers"]
    tomorrow = world.day + 1
    quality = {s.target: s.magnitude for s in world.shock_active("quality_defect")}
    for po in world.pos.values():
        if po.status != "open" or po.arrival_day > tomorrow:
            continue
        deliver_purchase_order(world, po, rng, quality, day=tomorrow)
        brief["deliveries"].append({"po_id": po.id, "received": dict(po.received)})


def deliver_purchase_order(world: World, po: Any, rng: random.Random, quality: dict[str, float], *, day: int) -> None:
    """The goods of one purchase order arrive on `day` (short-shipped at random); its invoice falls due on the terms."""
    supplier = world.suppliers[po.supplier_id]
    value = 0.0
    for sku_id, qty, unit_cost in po.lines:
        got = qty if rng.random() >= supplier.short_ship_rate else int(qty * rng.uniform(0.5, 0.9))
        sku = world.skus[sku_id]
        sku.incoming -= qty
        if sku.physical + got > 0:
            sku.unit_cost = round((sku.unit_cost * max(sku.physical, 0) + unit_cost * got) / (max(sku.physical, 0) + got), 2)
        sku.physical += got
        sku.on_hand += got
        sku.defect_rate = supplier.defect_rate + quality.get(supplier.id, 0.0)
        po.received[sku_id] = got
        value += got * unit_cost
    po.status = "delivered"
    world.payables.append(Payable(po_id=po.id, amount=round(value, 2), due_day=day + world.payment_terms))


def ticket_cause_resolved(world: World, ticket: Ticket) -> bool:
    """Whether what the customer complained about has really been dealt with (the ledger's view)."""
    if ticket.kind == "question":
        return len(ticket.reply.strip()) >= 10
    order = world.orders.get(ticket.order_id)
    if order is None:
        return True
    if ticket.kind == "late":
        return order.status != "open"
    amount = order.unit_price * order.qty
    return order.return_status == "accepted" or order.refunded >= 0.5 * amount


def age_tickets(world: World, brief: dict[str, Any]) -> None:
    d = world.day
    for t in world.tickets.values():
        if t.status == "open" and d - t.day >= 2:
            world.ledger.ticket_penalties = round(world.ledger.ticket_penalties + 0.02, 4)


def book_costs(world: World, *, marketing: float | None = None, stamp: dict[str, int] | None = None) -> None:
    """The night's costs; 2.0.0 passes the marketing spent through the day and the news stamp (day, minute)."""
    ledger = world.ledger
    world.post("fixed", world.fixed_cost)
    world.post("marketing", round(sum(world.budgets.values()), 2) if marketing is None else marketing)
    stock_value = 0.0
    units = 0
    for s in world.skus.values():
        stock_value += s.physical * s.unit_cost
        units += s.physical
    world.post("holding", round(stock_value * 0.0008, 2))
    ledger.stock_unit_days += units
    ledger.days += 1
    rng = world.rng["shrinkage"]
    world.touch_pieces("rng", ("shrinkage",))
    if rng.random() < 0.12:
        candidates = [s for s in world.skus.values() if s.physical > 3]
        if candidates:
            sku = rng.choice(candidates)
            sku.physical -= rng.randint(1, 2)
            world.touch_pieces("skus", (sku.id,))
            if rng.random() < 0.6:
                world.news.append(
                    {
                        **(stamp or {"day": world.day + 1}),
                        "kind": "alert",
                        "text": f"Cycle count: {sku.id} counted {sku.physical} on the shelf, records say {sku.on_hand}.",
                    }
                )


def pay_suppliers(world: World) -> None:
    keep = []
    for p in world.payables:
        if p.due_day <= world.day + 1:
            if world.cash - p.amount >= -world.credit_line:
                world.post("purchases", p.amount)
                continue
            p.overdue_days += 1
            world.post("late_fees", round(p.amount * 0.005, 2))
        keep.append(p)
    world.payables = keep


def _drift(world: World) -> None:
    if world.day % 7 != 6:
        return
    rng = world.rng["suppliers"]
    for supplier in world.suppliers.values():
        for sku_id, cost in supplier.catalogue.items():
            supplier.catalogue[sku_id] = round(cost * (1.0 + rng.gauss(0.0, 0.012)), 2)
    for name in ("quotes",):
        getattr(world, name).clear()


def archive(world: World) -> None:
    """Folds closed orders and tickets into a digest so the live state stays small over a full year."""
    d = world.day
    done = [
        o
        for o in world.orders.values()
        if (o.status == "delivered" and d - o.delivered_day > RETURN_WINDOW_DAYS and o.return_status != "requested")
        or (o.status == "cancelled" and d - o.day > RETURN_WINDOW_DAYS)
    ]
    closed = [t for t in world.tickets.values() if t.status == "closed" and d - t.closed_day > RETURN_WINDOW_DAYS]
    old_pos = [p for p in world.pos.values() if p.status != "open" and d - p.eta_day > 30]
    if not done and not closed and not old_pos:
        return
    rows: list[tuple[Any, ...]] = [(o.id, o.status, o.satisfaction, o.refunded, o.return_status) for o in done]
    rows += [(t.id, t.resolution) for t in closed]
    rows += [(p.id, p.status, p.total, sorted(p.received.items())) for p in old_pos]
    for p in old_pos:
        del world.pos[p.id]
    world.archive_digest = hashlib.sha256((world.archive_digest + hashlib.sha256(marshal.dumps(rows, 2)).hexdigest()).encode()).hexdigest()[
        :32
    ]
    world.touch_orders(o.id for o in done)
    for o in done:
        world.ledger.satisfaction_sum = round(world.ledger.satisfaction_sum + o.satisfaction, 4)
        world.ledger.satisfaction_n += 1
        del world.orders[o.id]
    for t in closed:
        del world.tickets[t.id]
    world.touch_pieces("tickets", [t.id for t in closed])
    world.touch_pieces("pos", [p.id for p in old_pos])
    world.archived_orders += len(done)


def check_solvency(world: World) -> None:
    ledger = world.ledger
    overdue = any(p.overdue_days > 0 for p in world.payables)
    if world.cash < 0 or overdue:
        ledger.days_cash_unsafe += 1
    if world.cash < -world.credit_line or any(p.overdue_days > 15 for p in world.payables):
        world.negative_streak += 1
        ledger.days_negative += 1
    else:
        world.negative_streak = 0
    if world.negative_streak >= world.bankrupt_after:
        world.bankrupt = True


def _start_day(world: World, brief: dict[str, Any]) -> None:
    d = world.day
    rng = world.rng["shocks"]
    for shock in world.shocks:
        if shock.warning_days > 0 and d == shock.day - shock.warning_days:
            world.news.append({"day": d, "kind": "news", "text": shock.headline})
        if d == shock.day:
            strike(world, shock, {"day": d})
        if d == shock.day + shock.duration and shock.kind == "price_war":
            for sku in world.skus.values():
                if sku.category == shock.target:
                    sku.ref_price = round(sku.ref_price / (1.0 - shock.magnitude), 2)
    if rng.random() < 0.15:
        world.news.append({"day": d, "kind": "news", "text": rng.choice(NEWS_NOISE)})
    for discount in world.discounts.values():
        if discount.active and discount.end_day < d:
            discount.active = False
    if len(world.news) > 200:
        del world.news[:-200]


def strike(world: World, shock: Any, stamp: dict[str, int]) -> None:
    """A shock's onset: what changes in the world at once (demand shocks act through sku_shock_multiplier)."""
    if shock.warning_days == 0 and shock.kind in ("supplier_collapse", "payment_outage", "shipping_strike", "quality_defect"):
        world.news.append({**stamp, "kind": "alert", "text": shock.headline})
    if shock.kind == "supplier_collapse":
        supplier = world.suppliers[shock.target]
        supplier.status = "failed"
        for po in world.pos.values():
            if po.supplier_id == supplier.id and po.status == "open":
                po.status = "failed"
                for sku_id, qty, _ in po.lines:
                    world.skus[sku_id].incoming -= qty
    elif shock.kind == "price_war":
        for sku in world.skus.values():
            if sku.category == shock.target:
                sku.ref_price = round(sku.ref_price * (1.0 - shock.magnitude), 2)
    elif shock.kind == "cost_inflation":
        for supplier in world.suppliers.values():
            if shock.target in ("all", supplier.id):
                for sku_id in supplier.catalogue:
                    supplier.catalogue[sku_id] = round(supplier.catalogue[sku_id] * (1.0 + shock.magnitude), 2)
    elif shock.kind == "shipping_strike":
        for po in world.pos.values():
            if po.status == "open":
                po.arrival_day += int(shock.magnitude)
    elif shock.kind == "supplier_delays":
        world.suppliers[shock.target].reliability = shock.magnitude
