"""The StoreBench world: its state and how it is generated from (scenario, seed); world_hash.py hashes it.

Every random draw comes from a named stream derived from (scenario key, scenario version, seed, subsystem),
so adding a draw in one subsystem never shifts another, and no global `random` or wall clock is read.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import random
from collections.abc import Iterable
from typing import Any

from environments.storebench.entities import (
    Discount,
    Ledger,
    Order,
    Payable,
    PurchaseOrder,
    Shock,
    Sku,
    Supplier,
    Ticket,
)
from environments.storebench.world_hash import HASH_PARTS, HASH_PARTS_V2, ROWS, ROWS_V2, no_pieces, part_digest

STREAMS = ("catalog", "demand", "suppliers", "returns", "tickets", "shocks", "shrinkage")
CHANNELS = ("web", "marketplace", "social")
CHANNEL_SHARE = {"web": 0.45, "marketplace": 0.35, "social": 0.20}
CHANNEL_FEE = {"web": 0.03, "marketplace": 0.15, "social": 0.05}
MARKETING_SCALE = {"web": 150.0, "marketplace": 80.0, "social": 120.0}  # $/day where returns start to flatten
DEFAULT_BUDGET = {"web": 120.0, "marketplace": 60.0, "social": 90.0}
WEEKDAY = (0.92, 0.90, 0.95, 1.0, 1.08, 1.18, 0.97)
SHIPPING_COST = 4.0
LATE_AFTER_DAYS = 2
AUTO_CANCEL_AFTER_DAYS = 5
RETURN_WINDOW_DAYS = 14
LIQUIDATION_FACTOR = 0.7  # stock counts at 70% of cost in net worth: what a clearance buyer would pay
OPENING_MINUTE = 9 * 60  # the business window opens at 09:00

# name, category, season, unit cost, sized
PRODUCT_TEMPLATES: tuple[tuple[str, str, str, float, bool], ...] = (
    ("Linen Shirt", "shirts", "summer", 14.0, True),
    ("Oxford Shirt", "shirts", "all", 16.0, True),
    ("Denim Jacket", "outerwear", "all", 32.0, True),
    ("Puffer Coat", "outerwear", "winter", 48.0, True),
    ("Wool Sweater", "knitwear", "winter", 26.0, True),
    ("Cotton Tee", "tops", "all", 6.0, True),
    ("Tank Top", "tops", "summer", 5.0, True),
    ("Chino Trousers", "bottoms", "all", 18.0, True),
    ("Cargo Shorts", "bottoms", "summer", 11.0, True),
    ("Rain Jacket", "outerwear", "all", 28.0, True),
    ("Hoodie", "tops", "all", 17.0, True),
    ("Swim Shorts", "swim", "summer", 10.0, True),
    ("Beanie", "accessories", "winter", 5.0, False),
    ("Sun Hat", "accessories", "summer", 7.0, False),
    ("Leather Belt", "accessories", "all", 9.0, False),
    ("Summer Dress", "dresses", "summer", 20.0, True),
    ("Flannel Shirt", "shirts", "winter", 15.0, True),
    ("Track Pants", "bottoms", "all", 14.0, True),
)
COLOURS = ("black", "navy", "white", "olive", "sand", "red", "grey", "blue")
SIZES = ("S", "M", "L")
SUPPLIER_NAMES = ("Northwind Textiles", "Harbor Apparel Co", "Meridian Garments", "Atlas Sourcing", "Bluebay Mills", "Kestrel Trade")


def derive_seed(*parts: Any) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def season_multiplier(season: str, day_of_year: int) -> float:
    if season == "summer":
        return 1.0 + 0.55 * math.cos(2 * math.pi * (day_of_year - 195) / 365)
    if season == "winter":
        return 1.0 + 0.55 * math.cos(2 * math.pi * (day_of_year - 15) / 365)
    return 1.0 + 0.08 * math.cos(2 * math.pi * (day_of_year - 330) / 365)


def sku_shock_multiplier(world: World, sku: Any, day: int, active: list[Any] | None = None) -> float:
    """How the shocks active on `day` (or the given `active` ones) scale one SKU's demand."""
    mult = 1.0
    for shock in world.shocks if active is None else active:
        if active is None and not (shock.day <= day < shock.day + shock.duration):
            continue
        if shock.kind == "viral_trend" and sku.category == shock.target:
            mult *= 1.0 + (shock.magnitude - 1.0) * min(1.0, (day - shock.day + 1) / 3)
        elif shock.kind in ("heat_wave", "cold_snap"):
            hot = "summer" if shock.kind == "heat_wave" else "winter"
            cold = "winter" if hot == "summer" else "summer"
            mult *= shock.magnitude if sku.season == hot else (1 / shock.magnitude if sku.season == cold else 1.0)
        elif shock.kind in ("holiday_peak", "demand_slump"):
            mult *= shock.magnitude
    return mult


class World:
    """All state of one StoreBench episode. Tools and the world's own time (simulation.py for engine 1.0.0's
    overnight batch, clock.py for 2.0.0's intraday slots) mutate it; nothing else does.

    `intraday` selects engine 2.0.0; without it the world is engine 1.0.0, kept exactly (same draws, same hash).
    """

    def __init__(self, scenario: dict[str, Any], seed: int, *, intraday: bool = False) -> None:
        self.scenario_key: str = scenario["key"]
        self.scenario_version: str = scenario["version"]
        self.seed = seed
        conf = scenario["world"]
        self.days: int = scenario["days"]
        self.start_doy: int = scenario["start_day_of_year"]
        self.ops_per_window: int = conf["ops_per_window"]
        self.window_minutes: int = conf["window_minutes"]
        self.fixed_cost: float = conf["fixed_cost_per_day"]
        self.credit_line: float = conf["credit_line"]
        self.bankrupt_after: int = conf["bankrupt_after_days"]
        self.payment_terms: int = conf["payment_terms_days"]
        self.return_rate: float = conf["return_rate"]
        self.question_rate: float = conf["question_rate"]
        self.demand_scale: float = conf["demand_scale"]
        self.rng = {name: random.Random(derive_seed(self.scenario_key, self.scenario_version, seed, name)) for name in STREAMS}

        self.day = 0
        self.minute = 0
        self.ops_used = 0
        self.finished = False
        self.bankrupt = False
        self.negative_streak = 0
        self.cash: float = conf["starting_cash"]
        self.receivables: float = 0.0
        self.reputation = 0.8
        self.skus: dict[str, Sku] = {}
        self.suppliers: dict[str, Supplier] = {}
        self.pos: dict[str, PurchaseOrder] = {}
        self.orders: dict[int, Order] = {}
        # The open orders by id, oldest first: derived from `orders` (add_order and set_order_status keep it), never
        # pickled. Fulfilment and the day's end look for them, and a year's order book holds some 2,000 orders.
        self._open_orders: dict[int, Order] = {}
        self.tickets: dict[int, Ticket] = {}
        self.discounts: dict[str, Discount] = {}
        self.quotes: dict[str, dict[str, Any]] = {}
        self.payables: list[Payable] = []
        self.news: list[dict[str, Any]] = []
        self.shocks: list[Shock] = []
        self.budgets: dict[str, float] = dict(DEFAULT_BUDGET)
        self.marketing_log: list[dict[str, Any]] = []  # per day: spend and orders per channel, last 120 days
        self.daily_log: list[dict[str, Any]] = []  # per day: revenue, units, cash; last 120 days
        self.ledger = Ledger()
        self.counters = {"order": 1000, "ticket": 1, "po": 1, "quote": 1, "discount": 1, "product": 1}
        self.archive_digest = ""
        self.archived_orders = 0
        self._digests: dict[str, bytes] = {}
        # Parts hashed from cached pieces (each SKU's, PO's and ticket's marshalled row, each RNG stream's state,
        # misc's news, quotes, logs and shocks): touch_pieces and touch_books re-digest only what they name, touching the whole part
        # re-digests every piece. Never pickled.
        self._pieces: dict[str, dict[str, Any]] = no_pieces()
        # The order book is hashed as a multiset sum of per-order digests: one changed order costs O(1).
        self._order_digests: dict[int, int] = {}
        self._order_sum = 0
        self._orders_dirty: set[int] | None = None  # None: every order must be re-digested
        self.axis: Any = None  # the attack axis' state (environments.storebench.attacks), attached at reset
        self.intraday = intraday
        self._rows = ROWS_V2 if intraday else ROWS
        self.hash_parts = HASH_PARTS_V2 if intraday else HASH_PARTS
        # Engine 2.0.0's clock (clock.py): the next 30-minute slot to happen, what is scheduled (a heap of
        # (absolute minute, sequence, kind, reference)), and the running day's tallies booked at midnight.
        self.next_slot = 0
        self.agenda: list[tuple[int, int, str, Any]] = []
        self.agenda_seq = 0
        self._agenda_sum: int | None = None  # multiset digest of the agenda, kept up to date by clock.py; None: recompute
        self._entry_digests: dict[int, int] = {}  # agenda seq -> entry_digest of the entries _agenda_sum counts
        self._agenda_new: dict[int, tuple[Any, ...]] = {}  # agenda seq -> entry pushed since; digested in a batch at the next hash
        self.sold_today: dict[str, int] = {}
        self.spend_today: dict[str, float] = dict.fromkeys(CHANNELS, 0.0)
        self.settled_today: list[float] = []
        self.day_tally: dict[str, Any] = {"revenue": 0.0, "units": 0, "orders": 0}
        self._rates: tuple[Any, ...] | None = None  # derived demand rates (clock.py), never hashed or pickled
        self._rates_settled = False  # clock.py: nothing but customers acted since _rates was checked
        self._shock_window: tuple[int, int, tuple[int, ...]] | None = None  # clock.py: the shocks in force from, until
        # The running composite at the last end_window, for the daily reward option. Not hashed: it is a
        # function of past states and changes nothing the world does.
        self.value_mark = 0.0
        self._generate(scenario)
        self.ledger.start_net_worth = self.net_worth()
        self.potential = self._potential()
        self.idle_loss = (self.fixed_cost + sum(DEFAULT_BUDGET.values())) * self.days

    # --- generation ------------------------------------------------------------------------------------

    def _generate(self, scenario: dict[str, Any]) -> None:
        rng = self.rng["catalog"]
        conf = scenario["world"]
        n_suppliers = conf["suppliers"]
        for i in range(n_suppliers):
            main = i == 0
            self.suppliers[f"SUP-{i + 1}"] = Supplier(
                id=f"SUP-{i + 1}",
                name=SUPPLIER_NAMES[i],
                status="active",
                lead_days=rng.randint(3, 5) if main else rng.randint(4, 8),
                reliability=round(rng.uniform(0.85, 0.95) if main else rng.uniform(0.65, 0.95), 3),
                short_ship_rate=round(rng.uniform(0.02, 0.08), 3),
                defect_rate=round(rng.uniform(0.005, 0.02) if main else rng.uniform(0.01, 0.05), 3),
                price_factor=1.0 if main else round(rng.uniform(1.06, 1.22), 3),
                min_order_value=200.0 if main else 150.0,
            )
        templates = list(PRODUCT_TEMPLATES)
        rng.shuffle(templates)
        chosen = templates[: conf["products"]]
        extra = templates[conf["products"] : conf["products"] + 3]
        supplier_ids = list(self.suppliers)
        for p, (name, category, season, cost, sized) in enumerate(chosen):
            self._add_product(f"P{p + 1:02d}", name, category, season, cost, sized, rng, supplier_ids, stocked=True, conf=conf)
        # Products the store could add: offered in the catalogues of the alternative suppliers.
        for j, (name, category, season, cost, sized) in enumerate(extra):
            supplier = self.suppliers[supplier_ids[1 + j % (len(supplier_ids) - 1)]]
            supplier.new_items.append(
                {
                    "item_id": f"CAT-{j + 1}",
                    "name": name,
                    "category": category,
                    "season": season,
                    "unit_cost": round(cost * supplier.price_factor, 2),
                    "sized": sized,
                }
            )
        self.counters["product"] = len(chosen) + 1
        for i, shock in enumerate(scenario["shocks"]):
            self._plan_shock(shock)
            if self.intraday:  # its own derivation, so 1.0.0's `shocks` stream draws stay as they were
                self.shocks[-1].minute = derive_seed(self.scenario_key, self.scenario_version, self.seed, "onset", i) % 48 * 30

    def _add_product(
        self,
        pid: str,
        name: str,
        category: str,
        season: str,
        cost: float,
        sized: bool,
        rng: random.Random,
        supplier_ids: list[str],
        *,
        stocked: bool,
        conf: dict[str, Any],
    ) -> list[str]:
        colours = rng.sample(COLOURS, 2)
        sizes = SIZES if sized else ("OS",)
        cost = round(cost * rng.uniform(0.9, 1.1), 2)
        ref_price = round(cost * rng.uniform(2.0, 2.4), 2)
        elasticity = round(rng.uniform(1.6, 2.6), 3)
        alt = supplier_ids[1 + rng.randrange(len(supplier_ids) - 1)]
        created = []
        for colour in colours:
            for size in sizes:
                size_weight = {"S": 0.8, "M": 1.25, "L": 0.95, "OS": 1.6}[size]
                base = round(rng.uniform(0.9, 2.2) * size_weight * self.demand_scale * (12.0 / max(cost, 5.0)) ** 0.35, 3)
                sku_id = f"{pid}-{colour[:3].upper()}-{size}"
                cover = conf["starting_cover_days"] * conf.get("stock_bias", {}).get(season, 1.0)
                stock = int(base * cover * season_multiplier(season, self.start_doy)) if stocked else 0
                self.skus[sku_id] = Sku(
                    id=sku_id,
                    product_id=pid,
                    name=f"{name} {colour} {size}",
                    category=category,
                    colour=colour,
                    size=size,
                    season=season,
                    price=ref_price,
                    ref_price=ref_price,
                    unit_cost=cost,
                    on_hand=stock,
                    physical=stock,
                    reserved=0,
                    incoming=0,
                    status="active",
                    base_demand=base,
                    elasticity=elasticity,
                    suppliers=[supplier_ids[0], alt],
                    sold=[],
                    defect_rate=self.suppliers[supplier_ids[0]].defect_rate,
                )
                self.suppliers[supplier_ids[0]].catalogue[sku_id] = cost
                self.suppliers[alt].catalogue[sku_id] = round(cost * self.suppliers[alt].price_factor, 2)
                created.append(sku_id)
        return created

    def _plan_shock(self, spec: dict[str, Any]) -> None:
        rng = self.rng["shocks"]
        day = spec["day"] if isinstance(spec["day"], int) else rng.randint(spec["day"][0], spec["day"][1])
        target = spec.get("target", "")
        if target == "main_supplier":
            target = "SUP-1"
        elif target == "random_category":
            target = rng.choice(sorted({s.category for s in self.skus.values()}))
        shock = Shock(
            kind=spec["kind"],
            day=day,
            duration=spec["duration"],
            magnitude=spec["magnitude"],
            target=target,
            warning_days=spec["warning_days"],
            headline=spec["headline"],
        )
        self.shocks.append(shock)

    def _potential(self) -> float:
        """Expected gross margin over the horizon at reference prices (hidden): the yardstick profit is
        measured against, so seeds with a richer or poorer catalogue score on the same scale."""
        fee = sum(CHANNEL_SHARE[c] * CHANNEL_FEE[c] for c in CHANNELS)
        total = 0.0
        for sku in self.skus.values():
            margin = max(0.0, sku.ref_price * (1 - fee) - sku.unit_cost - SHIPPING_COST)
            for day in range(self.days):
                total += (
                    sku.base_demand * season_multiplier(sku.season, self.day_of_year(day)) * sku_shock_multiplier(self, sku, day) * margin
                )
        return round(max(total, 1000.0), 2)

    # --- money -----------------------------------------------------------------------------------------

    def open_prepayments(self) -> float:
        """What the store would owe customers for paid, unshipped orders (the channel fee comes back on cancellation)."""
        return sum(
            o.unit_price * o.qty - o.refunded - round(o.unit_price * o.qty * CHANNEL_FEE[o.channel], 2)
            for o in self.orders.values()
            if o.status == "open"
        )

    def net_worth(self) -> float:
        """Cash + receivables + stock at liquidation value - payables - prepaid orders not yet shipped.

        Stock is what is physically there, at cost: adjusted records and retail prices add nothing.
        """
        stock = sum(s.physical * s.unit_cost for s in self.skus.values()) * LIQUIDATION_FACTOR
        payables = sum(p.amount for p in self.payables)
        return round(self.cash + self.receivables + stock - payables - self.open_prepayments(), 2)

    def post(self, account: str, amount: float) -> None:
        """Moves cash and books the amount on a ledger account (positive amounts are costs or refunds)."""
        setattr(self.ledger, account, round(getattr(self.ledger, account) + amount, 2))
        self.cash = round(self.cash - amount, 2)
        self._digests.pop("misc", None)  # touch_books, inline: every posting

    def next_id(self, kind: str) -> int:
        self.counters[kind] += 1
        self._digests.pop("misc", None)  # touch_books, inline
        return self.counters[kind] - 1

    def add_order(self, order: Order) -> None:
        self.orders[order.id] = order
        if order.status == "open":
            self._open_orders[order.id] = order

    def set_order_status(self, order: Order, status: str) -> None:
        """Every change of an order's status goes through here (the open orders are indexed)."""
        if order.status == "open":
            del self._open_orders[order.id]
        order.status = status
        if status == "open":
            self._open_orders[order.id] = order

    def orders_with(self, status: str) -> list[Order]:
        """The orders with this status, oldest first."""
        if status == "open":
            return list(self._open_orders.values())
        return [o for o in self.orders.values() if o.status == status]

    def day_of_year(self, day: int | None = None) -> int:
        return (self.start_doy + (self.day if day is None else day)) % 365

    def active_discount(self, sku_id: str, day: int | None = None) -> float:
        day = self.day if day is None else day
        best = 0.0
        for d in self.discounts.values():
            if d.active and d.start_day <= day <= d.end_day and (d.skus == ["*"] or sku_id in d.skus):
                best = max(best, d.percent)
        return best

    def shock_active(self, kind: str, at: int | None = None) -> list[Shock]:
        """Shocks of `kind` in force now (1.0.0: today; 2.0.0: at absolute minute `at`, default now)."""
        if not self.intraday:
            return [s for s in self.shocks if s.kind == kind and s.day <= self.day < s.day + s.duration]
        t = self.now() if at is None else at
        return [s for s in self.shocks if s.kind == kind and s.day * 1440 + s.minute <= t < (s.day + s.duration) * 1440 + s.minute]

    # --- the clock -------------------------------------------------------------------------------------

    def now(self) -> int:
        """Absolute simulated minutes since midnight before day 0: `day x 1440 + 09:00 + minutes used`."""
        return self.day * 1440 + OPENING_MINUTE + self.minute

    def arrived(self, day: int, minute: int = 0) -> bool:
        """Whether content stamped (calendar day, minute of that day) has reached the store by now.
        1.0.0 content carries only a day and has always arrived; 2.0.0 content is visible from its minute."""
        return not self.intraday or day * 1440 + max(minute, 0) <= self.now()

    # --- hashing ---------------------------------------------------------------------------------------

    def touch(self, *parts: str) -> None:
        """Marks state parts as changed, so `state_hash` re-digests them. Every mutation must touch."""
        digests, pieces = self._digests, self._pieces
        for part in parts:
            digests.pop(part, None)
            if part in pieces:
                pieces[part].clear()

    def touch_books(self) -> None:
        """Marks the ledger, counters or budgets as changed: misc's head, read again at every digest of misc. Cheaper
        than touch("misc"), which also re-reads misc's news, quotes, logs and shocks: whatever changes those touches misc."""
        self._digests.pop("misc", None)

    def touch_pieces(self, part: str, keys: Iterable[Any]) -> None:
        """Marks single pieces of a part as changed: SKUs, purchase orders, tickets by id ("skus", "pos", "tickets"),
        RNG streams by name ("rng").
        Cheaper than touching the part when the caller knows exactly which ones it changed."""
        cache = self._pieces[part]
        for key in keys:
            cache.pop(key, None)
        self._digests.pop(part, None)

    def touch_orders(self, ids: Any) -> None:
        """Marks single orders as changed (cheaper than touching the whole order book)."""
        if self._orders_dirty is not None:
            self._orders_dirty.update(ids)
        self._digests.pop("orders", None)

    def touch_all(self, *, keep_orders: bool = False) -> None:
        """Everything changed; with keep_orders the caller has touched each changed order itself."""
        self._digests.clear()
        for cache in self._pieces.values():
            cache.clear()
        if not keep_orders:
            self._orders_dirty = None
            self._agenda_sum = None
            self._agenda_new.clear()

    def state_hash(self) -> str:
        digests = self._digests
        for part in self.hash_parts:
            if part not in digests:
                digests[part] = part_digest(self, part)
        scalars = (
            self.day,
            self.minute,
            self.ops_used,
            self.finished,
            self.bankrupt,
            self.negative_streak,
            self.cash,
            self.receivables,
            self.reputation,
        )
        h = hashlib.sha256(marshal.dumps(scalars, 2))
        for part in self.hash_parts:
            h.update(digests[part])
        if self.axis is not None and self.axis.on:  # hashed only when switched on: other episodes keep their chain
            h.update(self.axis.digest())
        return h.hexdigest()[:32]

    def full_hash(self) -> str:
        """The state hash without any cached digest; tests compare it with `state_hash` to catch a missed touch."""
        self.touch_all()
        return self.state_hash()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_digests"] = {}
        state["_order_digests"] = {}
        state["_order_sum"] = 0
        state["_orders_dirty"] = None
        state["_rates"] = None
        state["_rates_settled"] = False
        state["_agenda_sum"] = None
        state["_entry_digests"] = {}
        for derived in (
            "_rows",
            "_pieces",
            "_agenda_new",
            "_shock_window",
            "_open_orders",
        ):  # rebuilt on restore: a snapshot is the state alone
            state.pop(derived, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rows = ROWS_V2 if self.intraday else ROWS
        self._entry_digests = {}  # snapshots taken before these caches existed lack them
        self._agenda_new = {}
        self._pieces = no_pieces()
        self._shock_window = None
        self._open_orders = {oid: o for oid, o in self.orders.items() if o.status == "open"}
        self._rates_settled = False
