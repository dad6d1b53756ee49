"""StoreBench: an online apparel store run through 29 merchant tools (see README.md in this folder).

Importing the package registers every scenario file as a task "storebench/<scenario>" and declares what the
lab needs (environments.meta): playable, the operator's panels, the anchor policies. It also registers the short
family, "storebench-short/<scenario>-<days>d" (short.py): the same engine on two- and three-day cuts.
"""

from __future__ import annotations

from environments.attacks import AttackAxis
from environments.meta import Column, EnvMeta, Highlight, Panel, Series, SortKey
from environments.registry import register, register_env
from environments.storebench.anchors import DoNothing, NaiveRestock, RandomValid
from environments.storebench.anchors_smart import Hardened, Oracle, SmartTriage
from environments.storebench.attack_texts import GOALS, GUIDANCE, STYLES
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scenario import load_scenarios
from environments.storebench.scoring import COMPONENTS, load_calibration, scenario_task
from environments.storebench.short import register_short

DEFAULT_THRESHOLD = 0.3


def _register_all() -> None:
    # Thresholds of this engine only, and of this scenario version: anything else is stale and not used.
    calibration = load_calibration(StoreBenchEnv.version)
    for scenario in load_scenarios():
        register(scenario_task("storebench", scenario, calibration, default_threshold=DEFAULT_THRESHOLD), StoreBenchEnv)


_register_all()

# The play page's panels. Tables lead with what an operator acts on: the SKUs closest to a stock-out, the
# oldest open orders, the most urgent tickets, the purchase orders due first. The chart's points come from
# get_finance and by-day sales reports this episode has already paid for.
_PANELS = (
    Panel(
        "Cash and revenue",
        "get_finance",
        renderer="chart",
        key="c",
        series=(Series("cash", "get_finance", y="cash"), Series("revenue per day", "get_sales_report", y="revenue", rows=True)),
    ),
    Panel(
        "Inventory",
        "get_inventory",
        renderer="table",
        key="i",
        columns=(
            Column("sku", "SKU"),
            Column("status"),
            Column("available"),
            Column("on_hand", "on hand"),
            Column("reserved"),
            Column("incoming"),
            Column("days_of_cover", "days of cover", missing="no sales in 14 days"),
        ),
        sort=(SortKey("days_of_cover"),),
        highlights=(
            Highlight("available", below=1, css="risk"),
            Highlight("days_of_cover", below=3, css="risk"),
            Highlight("days_of_cover", below=7, css="warn"),
        ),
    ),
    Panel(
        "Open orders",
        "list_orders",
        {"status": "open", "limit": 200},
        renderer="table",
        key="o",
        columns=(
            Column("order_id", "order"),
            Column("day", "ordered (day)"),
            Column("channel"),
            Column("sku", "SKU"),
            Column("quantity", "qty"),
            Column("unit_price", "price"),
            Column("late"),
        ),
        sort=(SortKey("day"), SortKey("order_id")),
        highlights=(Highlight("late", equals=(True,), css="risk"),),
    ),
    Panel(
        "Open tickets",
        "list_tickets",
        {"status": "open"},
        renderer="table",
        key="t",
        columns=(
            Column("ticket_id", "ticket"),
            Column("kind"),
            Column("day", "opened (day)"),
            Column("order_id", "order"),
            Column("message"),
        ),
        sort=(SortKey("kind", rank=("late", "faulty", "return", "question")), SortKey("day")),
        highlights=(Highlight("kind", equals=("late", "faulty"), css="risk"), Highlight("kind", equals=("return",), css="warn")),
    ),
    Panel(
        "Purchase orders",
        "list_purchase_orders",
        {"status": "open"},
        renderer="table",
        key="p",
        columns=(
            Column("po_id", "PO"),
            Column("supplier_id", "supplier"),
            Column("eta_day", "ETA (day)"),
            Column("overdue"),
            Column("created_day", "created (day)"),
            Column("total"),
            Column("expedited"),
            Column("lines"),
        ),
        sort=(SortKey("eta_day"),),
        highlights=(Highlight("overdue", equals=(True,), css="risk"),),
    ),
    Panel(
        "Sales by day",
        "get_sales_report",
        {"group_by": "day", "days": 14},
        renderer="table",
        key="s",
        columns=(Column("day"), Column("orders"), Column("units"), Column("revenue"), Column("cash")),
        sort=(SortKey("day", descending=True),),
    ),
    Panel(
        "News and alerts",
        "read_news",
        renderer="table",
        key="n",
        columns=(Column("day"), Column("kind"), Column("text")),
        sort=(SortKey("day", descending=True),),
        highlights=(Highlight("kind", equals=("alert",), css="warn"),),
    ),
)
# The anchors are declared here, not in anchors.py: anchors_smart subclasses anchors' ScriptedPolicy, so
# anchors.py importing it back would be a cycle.
STOREBENCH = EnvMeta(
    env="storebench",
    analyzer="environments.storebench.analyzer:StoreBenchAnalyzer",
    calibration="environments.storebench.calibration",
    playable=True,
    # What an operator keeps open in tabs; each opening is a tool call, charged like any other.
    panels=_PANELS,
    shortcuts={"f": "fulfil_orders", "r": "reply_ticket", "b": "create_purchase_order", "e": "end_window"},
    score_components=COMPONENTS,
    graded_by="reaching the horizon",
    anchors={cls.name: cls for cls in (DoNothing, RandomValid, NaiveRestock, SmartTriage, Hardened, Oracle)},
    default_anchor="smart-triage",
    demo_task="payment-outage",  # the shortest dev scenario (30 days): all five anchors on two seeds take seconds
    demo_priority=10,  # the flagship is the first-run demo whatever environments are added later
    attacks=AttackAxis(styles=STYLES, goals=GOALS, guidance=GUIDANCE),
)
register_env(STOREBENCH)
register_short(STOREBENCH, default_threshold=DEFAULT_THRESHOLD)

__all__ = ["StoreBenchEnv"]
