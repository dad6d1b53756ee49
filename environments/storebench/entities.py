"""The world's entities: plain slotted dataclasses, so a snapshot is one pickle and a hash is one marshal.

Money is in dollars, rounded to cents at every posting. Hidden fields (demand, elasticity, reliability,
physical stock) live beside the visible ones; the tools decide what an agent may see, never these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any


@dataclass(slots=True)
class Sku:
    id: str
    product_id: str
    name: str
    category: str
    colour: str
    size: str
    season: str  # summer | winter | all
    price: float
    ref_price: float  # the market's reference price; competitors move it (hidden)
    unit_cost: float  # book cost per unit (last landed cost)
    on_hand: int  # what the records say
    physical: int  # what is really on the shelf (hidden); adjustments never change it
    reserved: int  # committed to open customer orders
    incoming: int  # on open purchase orders
    status: str  # active | draft | archived
    base_demand: float  # units per day at the reference price (hidden)
    elasticity: float  # price elasticity (hidden)
    defect_rate: float = 0.0  # share of units that come back faulty, from the last supplier that delivered (hidden)
    suppliers: list[str] = field(default_factory=list)
    sold: list[int] = field(default_factory=list)  # units sold per day, most recent last, at most 120


@dataclass(slots=True)
class Supplier:
    id: str
    name: str
    status: str  # active | failed
    lead_days: int  # quoted lead time
    reliability: float  # chance a shipment is on time (hidden)
    short_ship_rate: float  # chance a line arrives short (hidden)
    defect_rate: float  # share of units returned as faulty (hidden)
    price_factor: float
    min_order_value: float
    catalogue: dict[str, float] = field(default_factory=dict)  # sku id -> unit cost
    new_items: list[dict[str, Any]] = field(default_factory=list)  # products the store does not list yet


@dataclass(slots=True)
class PurchaseOrder:
    id: str
    supplier_id: str
    lines: list[list[Any]]  # [sku, quantity, unit_cost]
    status: str  # open | delivered | cancelled | failed
    created_day: int
    eta_day: int  # what the supplier promised
    arrival_day: int  # when it will really arrive (hidden)
    total: float
    expedited: bool = False
    received: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Order:
    id: int
    day: int
    channel: str
    sku: str
    qty: int
    unit_price: float
    status: str  # open | shipped | delivered | cancelled
    ship_day: int = -1
    delivered_day: int = -1
    refunded: float = 0.0
    return_status: str = "none"  # none | requested | accepted | rejected
    return_day: int = -1
    faulty: bool = False
    late: bool = False
    cancelled_by: str = ""  # customer | merchant
    satisfaction: float = -1.0  # settled when the order closes; -1 while open
    minute: int = -1  # engine 2.0.0: minute of `day` (0-1439) the customer placed it; -1 in 1.0.0


@dataclass(slots=True)
class Ticket:
    id: int
    day: int
    order_id: int
    kind: str  # late | faulty | return | question
    status: str  # open | closed
    message: str
    reply: str = ""
    resolution: str = ""
    closed_day: int = -1
    minute: int = -1  # engine 2.0.0: minute of `day` (0-1439) the ticket arrived; -1 in 1.0.0


@dataclass(slots=True)
class Discount:
    id: str
    code: str
    skus: list[str]  # ["*"] for the whole store
    percent: float
    start_day: int
    end_day: int
    active: bool = True


@dataclass(slots=True)
class Payable:
    po_id: str
    amount: float
    due_day: int
    overdue_days: int = 0


@dataclass(slots=True)
class Shock:
    kind: str
    day: int
    duration: int
    magnitude: float
    target: str
    warning_days: int
    headline: str
    minute: int = -1  # engine 2.0.0: minute of `day` (0-1439) it strikes; 1.0.0 strikes at the day's start


@dataclass(slots=True)
class Ledger:
    """The world's own books. The score reads only this and the world state, never what the agent wrote."""

    revenue: float = 0.0
    cogs: float = 0.0
    refunds: float = 0.0
    fees: float = 0.0
    shipping: float = 0.0
    marketing: float = 0.0
    fixed: float = 0.0
    holding: float = 0.0
    late_fees: float = 0.0
    purchases: float = 0.0
    units_demanded: int = 0
    units_lost_stockout: int = 0
    units_lost_outage: int = 0
    units_ordered: int = 0
    units_on_time: int = 0
    units_late: int = 0
    units_cancelled: int = 0
    units_sold: int = 0
    satisfaction_sum: float = 0.0
    satisfaction_n: int = 0
    ticket_penalties: float = 0.0
    stock_unit_days: int = 0
    days: int = 0
    days_cash_unsafe: int = 0
    days_negative: int = 0
    start_net_worth: float = 0.0


def row_getter(cls: type, exclude: tuple[str, ...] = ()) -> attrgetter[Any]:
    """A fast C getter for every field of a dataclass (but `exclude`), for hashing rows without identity effects."""
    return attrgetter(*[f.name for f in fields(cls) if f.name not in exclude])


# Fields engine 2.0.0 added: the frozen 1.0.0 engine hashes rows without them, so its chains stay exact.
V2_FIELDS = ("minute",)
