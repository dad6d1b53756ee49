"""Engine 2.0.0's clock: the world moves through the day in fixed 30-minute slots, not in one overnight batch.

A **slot** is the half hour [k x 30, k x 30 + 30) of absolute simulated time (minutes since midnight before
day 0). Slot k *happens*, as a whole and in order, as soon as the clock is past its start: a tool call that
moves the clock from 10:55 to 11:05 first runs slot 11:00, then its handler, so the call sees what arrived.
Everything a slot does is stamped with the slot's start minute. Each slot draws from its own RNG streams,
seeded by (scenario, version, seed, stream, k), and reads the state (prices, stock, budgets, open orders) at
the moment it runs. So the schedule is a function of the seed and the minute only, never of how the agent
chopped its time: twenty 5-minute calls and one 100-minute wait run the same slots in the same order, and two
runs that make the same calls at the same minutes are identical. (The agent's own draws, such as faulty units
at shipping, stay on the world's persistent streams.) Thirty minutes is two or three calls (reads cost 5
minutes, work 10-20): fine enough for an agent to watch the day happen, coarse enough that a year is 17,520
slots, about 0.75 s of simulation.

What happens when (`OPENING_MINUTE` is 09:00; the business window is `window_minutes` from there):

    every slot     customers order, per channel along CURVES (day and night); customer questions;
                   marketing spend accrues at the channel's traffic share of the daily budget
    agenda         a heap of dated events: an unshipped order's customer complains on the day it turns late
                   and cancels five days after ordering; shipped parcels reach customers two days later
                   (plus any carrier strike); returns, faulty-item complaints and chargebacks; purchase
                   orders arrive between 06:00 and 14:30 on their arrival day; shock warnings, onsets and
                   ends; noise news; the weekly supplier price change (with a notice)
    00:00          the night's books for the day that closed: channel payouts, daily sales and marketing
                   logs, reputation, ticket ageing, fixed/marketing/storage costs and shrinkage, supplier
                   payments, archive, solvency; then the new day's agenda is drawn
    end_window     fast-forwards through the rest of the day and the night to 09:00

The last day is for closing: the store takes no new orders once its window opens (nobody could ship them).
"""

from __future__ import annotations

import _random
import hashlib
import random
from bisect import bisect_right
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from environments.storebench.entities import Order, Ticket
from environments.storebench.simulation import (
    NEWS_NOISE,
    age_tickets,
    archive,
    book_costs,
    cancel_order,
    chargeback,
    check_solvency,
    deliver_purchase_order,
    marketing_multiplier,
    new_brief,
    pay_suppliers,
    place_order,
    poisson,
    strike,
)
from environments.storebench.world import (
    CHANNEL_SHARE,
    CHANNELS,
    OPENING_MINUTE,
    WEEKDAY,
    World,
    season_multiplier,
    sku_shock_multiplier,
)
from environments.storebench.world_hash import agenda_pop, agenda_push

SLOT_MINUTES = 30
SLOTS_PER_DAY = 1440 // SLOT_MINUTES
DAY = 1440

# Relative traffic per hour of the day (00-23), per channel: web peaks in the evening after work, the
# marketplace around lunch and the early afternoon, social late in the evening; all are quiet before dawn.
HOURLY: dict[str, tuple[float, ...]] = {
    "web": (0.5, 0.3, 0.2, 0.15, 0.15, 0.2, 0.4, 0.7, 1.0, 1.1, 1.1, 1.2, 1.4, 1.3, 1.1, 1.1, 1.2, 1.4, 1.8, 2.2, 2.4, 2.1, 1.5, 0.9),
    "marketplace": (
        0.3,
        0.2,
        0.15,
        0.1,
        0.1,
        0.2,
        0.4,
        0.8,
        1.2,
        1.6,
        1.9,
        2.2,
        2.4,
        2.3,
        2.0,
        1.7,
        1.4,
        1.2,
        1.1,
        1.0,
        0.9,
        0.8,
        0.6,
        0.4,
    ),
    "social": (1.2, 0.8, 0.4, 0.2, 0.1, 0.1, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.1, 1.0, 0.9, 0.9, 1.0, 1.2, 1.5, 1.8, 2.1, 2.4, 2.6, 2.0),
}


def _per_slot(hourly: tuple[float, ...]) -> tuple[float, ...]:
    halves = [h for h in hourly for _ in range(60 // SLOT_MINUTES)]
    total = sum(halves)
    return tuple(h / total for h in halves)


# CURVES[channel][slot of the day]: the share of the channel's daily demand in that slot (each sums to 1).
CURVES: dict[str, tuple[float, ...]] = {c: _per_slot(HOURLY[c]) for c in CHANNELS}
_PRICE_STATUS = attrgetter("price", "status")
QUESTIONS = ("Does this run true to size?", "Do you ship abroad?", "Can I change my delivery address?")


def slot_rng(world: World, slot: int, stream: str) -> random.Random:
    """random.Random(derive_seed(scenario key, version, seed, stream, slot)), the same generator built with less
    Python around it: a year makes 25,000 of them."""
    digest = hashlib.sha256(f"{world.scenario_key}:{world.scenario_version}:{world.seed}:{stream}:{slot}".encode()).digest()
    rng = _NEW_RANDOM(random.Random)
    _SEED(rng, int.from_bytes(digest[:8], "big"))  # what Random.seed does with an int, less its Python frame
    rng.gauss_next = None  # type: ignore[attr-defined]  # (random.Random's, undeclared in its stub)
    return rng


_NEW_RANDOM = random.Random.__new__
_SEED = _random.Random.seed


def begin(world: World) -> None:
    """Day 0 opens at 09:00 with nothing before it; its agenda (shocks, news) is drawn as at any midnight."""
    world.next_slot = OPENING_MINUTE // SLOT_MINUTES
    _open_day(world, 0, slot_rng(world, 0, "day"))
    world.touch_all()


def advance_to(world: World, t: int, brief: dict[str, Any]) -> int:
    """Runs every slot that starts before absolute minute `t`; returns how many ran."""
    ran = 0
    world._rates_settled = False  # tools have run since the last slot: prices, budgets, discounts may have changed
    while world.next_slot * SLOT_MINUTES < t and not world.bankrupt:
        _run_slot(world, world.next_slot, brief)
        world.next_slot += 1
        ran += 1
    if ran:
        world.touch("clock")
    return ran


def end_window(world: World) -> dict[str, Any]:
    """The rest of the day and the night pass; the next window opens at 09:00 with a fresh budget."""
    assert not world.finished, "end_window after the episode ended"
    brief = new_brief()
    advance_to(world, (world.day + 1) * DAY + OPENING_MINUTE, brief)
    world.day += 1
    world.minute = 0
    world.ops_used = 0
    if world.day >= world.days and not world.bankrupt:
        world.finished = True
    world.touch("misc", "clock")
    return brief


def schedule(world: World, minute: int, kind: str, ref: Any) -> None:
    agenda_push(world, (minute, world.agenda_seq, kind, ref))
    world.agenda_seq += 1
    world.touch("clock")


def strike_delay(world: World) -> int:
    """The days a carrier strike in force now adds to every parcel shipped now."""
    return sum(int(s.magnitude) for s in world.shock_active("shipping_strike"))


def schedule_delivery(world: World, order: Order, *, strike_days: int) -> None:
    """A parcel shipped today reaches the customer two days later (plus `strike_days`, strike_delay), in the daytime."""
    schedule(world, (order.ship_day + 2 + strike_days) * DAY + OPENING_MINUTE + order.id % 18 * SLOT_MINUTES, "deliver", order.id)


def store_closes(world: World) -> int:
    """No customer orders (or questions) from the last window's opening: nobody could ship them, as in 1.0.0,
    where the last night brings no orders. (Otherwise last-day demand that no play can serve would count as
    missed service, and suppressing it with absurd last-day prices would pay.)"""
    return (world.days - 1) * DAY + OPENING_MINUTE


# --- one slot --------------------------------------------------------------------------------------------


def _run_slot(world: World, slot: int, brief: dict[str, Any]) -> None:
    t = slot * SLOT_MINUTES
    day, minute = divmod(t, DAY)
    if minute == 0 and day > 0:
        world._rates_settled = False
        _close_day(world, day - 1, brief)
        if world.bankrupt:
            return
        _open_day(world, day, slot_rng(world, slot, "day"))
    if minute == 360:  # purchase orders due today get their delivery time
        rng = slot_rng(world, slot, "deliveries")
        for po in world.pos.values():
            if po.status == "open" and po.arrival_day <= day:
                schedule(world, t + rng.randrange(18) * SLOT_MINUTES, "po", po.id)
    agenda = world.agenda
    if agenda and agenda[0][0] < t + SLOT_MINUTES:
        rng = slot_rng(world, slot, "events")
        while agenda and agenda[0][0] < t + SLOT_MINUTES:
            entry = agenda_pop(world)
            if entry[2] not in RATE_NEUTRAL:  # a strike or a price war's end moves reference prices
                world._rates_settled = False
            HANDLERS[entry[2]](world, entry[3], day, minute, rng, brief)
    if t < store_closes(world):
        _customers(world, slot, day, minute, brief)
    share = minute // SLOT_MINUTES
    for c in CHANNELS:
        world.spend_today[c] += world.budgets[c] * CURVES[c][share]


def _rates(world: World, day: int, t: int) -> tuple[Any, ...]:
    """Per-SKU daily demand rates under the state now (cached until an input changes: a pure function of them).

    Between two slots of one advance where no day turned and no event outside RATE_NEUTRAL ran, only customers and
    rate-neutral events acted, and they change none of the inputs but the clock's: then the key is not rebuilt
    (68 SKUs, each slot of a year)."""
    active = _active_shocks(world, t)
    cached = world._rates
    if world._rates_settled and cached is not None and cached[0][0] == day and cached[0][3] == active:
        return cached
    world._rates_settled = True
    key = (
        day,
        world.reputation,
        tuple(world.budgets.values()),
        active,
        tuple(map(_PRICE_STATUS, world.skus.values())),
        tuple((d.active, d.start_day, d.end_day, d.percent) for d in world.discounts.values()),
    )
    if cached is not None and cached[0] == key:
        return cached
    shocks = [world.shocks[i] for i in active]
    doy = world.day_of_year(day)
    reputation = 0.55 + 0.55 * world.reputation
    seasons = {s: season_multiplier(s, doy) for s in ("summer", "winter", "all")}
    skus, prices, cumulative = [], [], []
    total = 0.0
    for sku in world.skus.values():
        if sku.status != "active":
            continue
        price = round(sku.price * (1.0 - world.active_discount(sku.id, day) / 100.0), 2)
        price_effect = min(3.0, (max(price, 0.01) / sku.ref_price) ** (-sku.elasticity))
        rate = (
            sku.base_demand
            * seasons[sku.season]
            * WEEKDAY[day % 7]
            * price_effect
            * reputation
            * sku_shock_multiplier(world, sku, day, shocks)
        )
        total += rate
        skus.append(sku)
        prices.append(price)
        cumulative.append(total)
    channel_mult = {c: CHANNEL_SHARE[c] * marketing_multiplier(c, world.budgets[c]) for c in CHANNELS}
    outage = {s.target for s in shocks if s.kind == "payment_outage"}
    world._rates = (key, skus, prices, cumulative, total, channel_mult, outage)
    return world._rates


def _active_shocks(world: World, t: int) -> tuple[int, ...]:
    """The indices of the shocks in force at absolute minute `t`, remembered until the next onset or end (shocks
    keep their timing once planned)."""
    window = world._shock_window
    if window is None or not window[0] <= t < window[1]:
        spans = [(s.day * DAY + s.minute, (s.day + s.duration) * DAY + s.minute) for s in world.shocks]
        active = tuple(i for i, (start, end) in enumerate(spans) if start <= t < end)
        edges = [edge for span in spans for edge in span]
        since = max((edge for edge in edges if edge <= t), default=-(1 << 62))
        until = min((edge for edge in edges if edge > t), default=1 << 62)
        window = world._shock_window = (since, until, active)
    return window[2]


def _customers(world: World, slot: int, day: int, minute: int, brief: dict[str, Any]) -> None:
    """This slot's customers: orders per channel (Poisson, thinned over SKUs by their rates) and questions."""
    _, skus, prices, cumulative, total, channel_mult, outage = _rates(world, day, slot * SLOT_MINUTES)
    rng = slot_rng(world, slot, "demand")
    share = minute // SLOT_MINUTES
    placed, reserved = [], []
    for channel in CHANNELS:
        n = poisson(rng, total * channel_mult[channel] * CURVES[channel][share]) if total > 0 else 0
        for _ in range(n):
            i = min(bisect_right(cumulative, rng.random() * total), len(skus) - 1)
            sku, price = skus[i], prices[i]
            qty = 2 if rng.random() < 0.08 else 1
            oid = place_order(world, brief, sku=sku, channel=channel, qty=qty, price=price, day=day, outage=outage, minute=minute)
            if oid is None:
                continue
            placed.append(oid)
            reserved.append(sku.id)
            world.sold_today[sku.id] = world.sold_today.get(sku.id, 0) + qty
            tally = world.day_tally
            tally["revenue"] = round(tally["revenue"] + price * qty, 2)
            tally["units"] += qty
            tally["orders"] += 1
            # The customer complains during the business day the order turns late, if it is still unshipped.
            schedule(world, (day + 2) * DAY + OPENING_MINUTE + rng.randrange(18) * SLOT_MINUTES, "late", oid)
    if placed:
        world.touch_orders(placed)
        world.touch_pieces("skus", reserved)
    if rng.random() < world.question_rate * 4 / SLOTS_PER_DAY:
        _new_ticket(world, 0, "question", rng.choice(QUESTIONS), day, minute, brief)
    world.touch_books()  # the ledger's demand and stock-out counts
    world.touch("clock")


def _new_ticket(world: World, order_id: int, kind: str, message: str, day: int, minute: int, brief: dict[str, Any]) -> None:
    tid = world.next_id("ticket")
    world.tickets[tid] = Ticket(id=tid, day=day, order_id=order_id, kind=kind, status="open", message=message, minute=minute)
    brief["new_tickets"] += 1
    world.touch_pieces("tickets", (tid,))


# --- midnight ------------------------------------------------------------------------------------------------


def _close_day(world: World, day: int, brief: dict[str, Any]) -> None:
    """The night's books for `day` (the window's day: midnight always falls before the next 09:00)."""
    assert world.day == day, f"midnight closing day {day} while the window is day {world.day}"
    world.cash = round(world.cash + world.receivables, 2)
    world.receivables = 0.0
    for sku in world.skus.values():
        sku.sold.append(world.sold_today.get(sku.id, 0))
        if len(sku.sold) > 120:
            del sku.sold[0]
    tally = world.day_tally
    world.daily_log.append(
        {"day": day, "revenue": tally["revenue"], "units": tally["units"], "orders": tally["orders"], "cash": world.cash}
    )
    outage = sorted({s.target for s in world.shocks if s.kind == "payment_outage" and s.day <= day < s.day + s.duration})
    world.marketing_log.append({"day": day, "spend": {c: round(v, 2) for c, v in world.spend_today.items()}, "outage": outage})
    for log in (world.daily_log, world.marketing_log):
        if len(log) > 120:
            del log[0]
    if world.settled_today:
        world.reputation = round(0.9 * world.reputation + 0.1 * (sum(world.settled_today) / len(world.settled_today)), 4)
    age_tickets(world, brief)
    book_costs(world, marketing=round(sum(world.spend_today.values()), 2), stamp={"day": day + 1, "minute": 0})
    pay_suppliers(world)
    archive(world)
    check_solvency(world)
    world.sold_today = {}
    world.spend_today = dict.fromkeys(CHANNELS, 0.0)
    world.settled_today = []
    world.day_tally = {"revenue": 0.0, "units": 0, "orders": 0}
    # What the books changed beside what they touched themselves (orders, shrinkage, archived tickets and POs):
    # the payables, misc (ledger, logs, news), the day's tallies and the sales histories.
    world.touch("payables", "misc", "clock", "sales")


def _open_day(world: World, day: int, rng: random.Random) -> None:
    """Draws the new day's dated events: shock warnings, onsets and ends, noise news, the weekly price change."""
    for i, shock in enumerate(world.shocks):
        if shock.warning_days > 0 and day == shock.day - shock.warning_days:
            schedule(world, day * DAY + 420 + rng.randrange(20) * SLOT_MINUTES, "warn", i)  # 07:00-16:30
        if day == shock.day:
            schedule(world, day * DAY + shock.minute, "strike", i)
        if day == shock.day + shock.duration and shock.kind == "price_war":
            schedule(world, day * DAY + shock.minute, "war_end", i)
    if rng.random() < 0.15:
        schedule(world, day * DAY + rng.randrange(SLOTS_PER_DAY) * SLOT_MINUTES, "noise", rng.randrange(len(NEWS_NOISE)))
    if day > 0 and day % 7 == 0:
        schedule(world, day * DAY + 480 + rng.randrange(18) * SLOT_MINUTES, "drift", 0)  # 08:00-16:30
    for discount in world.discounts.values():
        if discount.active and discount.end_day < day:
            discount.active = False
            world.touch("discounts")
    if len(world.news) > 200:
        del world.news[:-200]


# --- dated events ----------------------------------------------------------------------------------------------

Handler = Callable[[World, Any, int, int, random.Random, dict[str, Any]], None]


def _on_late(world: World, oid: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    o = world.orders.get(oid)
    if o is None or o.status != "open":
        return
    if rng.random() < 0.5:
        _new_ticket(world, o.id, "late", f"Order {o.id} has not shipped yet. Where is it?", day, minute, brief)
    schedule(world, (o.day + 5) * DAY + o.minute, "expire", o.id)


def _on_expire(world: World, oid: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    o = world.orders.get(oid)
    if o is None or o.status != "open":
        return
    cancel_order(world, o, by="customer")
    world.touch_pieces("skus", (o.sku,))
    world.settled_today.append(o.satisfaction)
    brief["customer_cancellations"] += 1


def _on_deliver(world: World, oid: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    o = world.orders.get(oid)
    if o is None or o.status != "shipped":
        return
    world.touch_orders((o.id,))
    world.set_order_status(o, "delivered")
    o.delivered_day = day
    o.satisfaction = 0.6 if o.late else 1.0
    world.settled_today.append(o.satisfaction)
    t = day * DAY + minute
    if o.faulty and rng.random() < 0.85:
        schedule(world, t + rng.randint(1, 3) * DAY, "return", o.id)
    elif rng.random() < world.return_rate:
        schedule(world, t + rng.randint(2, 10) * DAY, "return", o.id)


def _on_return(world: World, oid: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    o = world.orders.get(oid)
    if o is None or o.status != "delivered" or o.return_status != "none":
        return
    world.touch_orders((o.id,))
    o.return_status = "requested"
    o.return_day = day
    brief["return_requests"] += 1
    if o.faulty:
        _new_ticket(world, o.id, "faulty", f"The item from order {o.id} arrived faulty. I want my money back.", day, minute, brief)
    schedule(world, (day + 7) * DAY + minute, "chargeback", o.id)


def _on_chargeback(world: World, oid: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    o = world.orders.get(oid)
    if o is not None and o.return_status == "requested":
        chargeback(world, o)


def _on_po(world: World, po_id: str, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    po = world.pos.get(po_id)
    if po is None or po.status != "open" or po.arrival_day > day:
        return  # cancelled, failed, or pushed back by a strike since it was scheduled
    quality = {s.target: s.magnitude for s in world.shock_active("quality_defect", day * DAY + minute)}
    deliver_purchase_order(world, po, rng, quality, day=day)
    brief["deliveries"].append({"po_id": po.id, "received": dict(po.received)})
    world.touch_pieces("skus", [sku_id for sku_id, _, _ in po.lines])
    world.touch_pieces("pos", (po.id,))
    world.touch("payables")


def _news(world: World, day: int, minute: int, kind: str, text: str) -> None:
    world.news.append({"day": day, "minute": minute, "kind": kind, "text": text})
    world.touch("misc")


def _on_warn(world: World, i: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    _news(world, day, minute, "news", world.shocks[i].headline)


def _on_strike(world: World, i: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    strike(world, world.shocks[i], {"day": day, "minute": minute})
    world.touch("suppliers", "pos", "skus", "misc")


def _on_war_end(world: World, i: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    shock = world.shocks[i]
    for sku in world.skus.values():
        if sku.category == shock.target:
            sku.ref_price = round(sku.ref_price / (1.0 - shock.magnitude), 2)
    world.touch("skus")


def _on_noise(world: World, i: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    _news(world, day, minute, "news", NEWS_NOISE[i])


def _on_drift(world: World, _: int, day: int, minute: int, rng: random.Random, brief: dict[str, Any]) -> None:
    for supplier in world.suppliers.values():
        for sku_id, cost in supplier.catalogue.items():
            supplier.catalogue[sku_id] = round(cost * (1.0 + rng.gauss(0.0, 0.012)), 2)
    world.quotes.clear()
    _news(world, day, minute, "notice", "Suppliers have updated their price lists; quotes issued before now are withdrawn.")
    world.touch("suppliers")


# The dated events that change no input of the demand rates (prices, statuses, budgets, discounts, reputation):
# after them the next slot's customers need not rebuild the rates' key (clock._rates).
RATE_NEUTRAL = frozenset(("late", "expire", "deliver", "return", "chargeback", "po", "warn", "noise", "drift"))
HANDLERS: dict[str, Handler] = {
    "late": _on_late,
    "expire": _on_expire,
    "deliver": _on_deliver,
    "return": _on_return,
    "chargeback": _on_chargeback,
    "po": _on_po,
    "warn": _on_warn,
    "strike": _on_strike,
    "war_end": _on_war_end,
    "noise": _on_noise,
    "drift": _on_drift,
}
