"""Workdesk test helpers: a fresh desk for a task and seed, a one-line tool call, a table loader for calc."""

from __future__ import annotations

from typing import Any

from environments.core import StepResult, ToolCall
from environments.registry import make
from environments.workdesk.calc import CalcError, Table
from environments.workdesk.env import WorkdeskEnv


def new_desk(task: str = "analyst", seed: int = 1000) -> WorkdeskEnv:
    env = make(f"workdesk/{task}", seed=seed)
    assert isinstance(env, WorkdeskEnv)
    return env


def do(env: WorkdeskEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name, arguments))


# alice's small ledger: INV-1 appears twice (a duplicate export), INV-3 was rejected.
LEDGER = Table(
    ("invoice_id", "department", "amount", "status"),
    (
        ("INV-1", "Sales", 100.0, "approved"),
        ("INV-1", "Sales", 100.0, "approved"),
        ("INV-2", "Ops", 250.5, "approved"),
        ("INV-3", "Sales", 40.0, "rejected"),
    ),
)


def loader(path: str) -> Table:
    if path == "ledger.csv":
        return LEDGER
    if path == "big.csv":  # mallory's table: far more cells than a program may touch
        return Table(("x",), tuple((1.0,) for _ in range(60_000)))
    raise CalcError(f"table: no file {path!r}")
