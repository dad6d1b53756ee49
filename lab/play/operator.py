"""What the operator sees on the play page, read through the environment's own read tools.

The panels call StoreBench's read tools (get_finance, get_inventory, list_orders, ...) on a private copy of the
session's environment (`play_env`), through the tool dispatcher, so looking never spends the player's budget
nor changes the state hash. Only the clock and the operations left in the window, which no tool reports, come
from the world's public attributes and the environment's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from environments.core import Env

# (panel title, tool, arguments): what an operator keeps open in tabs.
STOREBENCH_PANELS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Cash and P&L", "get_finance", {}),
    ("Inventory", "get_inventory", {}),
    ("Open orders", "list_orders", {"status": "open"}),
    ("Purchase orders", "list_purchase_orders", {"status": "open"}),
    ("Open tickets", "list_tickets", {"status": "open"}),
    ("News and alerts", "read_news", {}),
)


@dataclass
class OperatorView:
    summary: str
    clock: dict[str, Any] = field(default_factory=dict)
    panels: list[dict[str, Any]] = field(default_factory=list)


def _clock(env: Any) -> dict[str, Any]:
    world = env.world
    minutes = int(env.sim_minutes())
    day, minute_of_day = divmod(minutes, 1440)
    return {
        "day": world.day,
        "days_total": world.days,
        "time": f"{minute_of_day // 60:02d}:{minute_of_day % 60:02d}",
        "ops_left": world.ops_per_window - world.ops_used,
        "ops_per_window": world.ops_per_window,
        "minutes_left": world.window_minutes - world.minute,
    }


def operator_view(env: Env) -> OperatorView:
    """The panels for `env`, which must be a private copy (the read tools run on it)."""
    view = OperatorView(summary=env.summary())
    if env.name != "storebench":
        return view
    from environments.storebench.tools import execute

    view.clock = _clock(env)
    world = env.world  # type: ignore[attr-defined]
    for title, tool, arguments in STOREBENCH_PANELS:
        content, is_error, _events = execute(world, tool, dict(arguments))
        view.panels.append({"title": title, "tool": tool, "content": content, "is_error": is_error})
    return view
