"""Desktop test helpers: a fresh desktop for a task, seed and drift level, and a one-line tool call."""

from __future__ import annotations

from typing import Any

from environments.core import StepResult, ToolCall
from environments.desktop.env import DesktopEnv
from environments.desktop.state import AppData, Ui
from environments.desktop.world import build_world
from environments.registry import make


def new_desktop(task: str = "move-files", seed: int = 1000, drift: str = "none") -> DesktopEnv:
    env = make(f"desktop/{task}", seed=seed, options={"drift": drift} if drift != "none" else None)
    assert isinstance(env, DesktopEnv)
    return env


def do(env: DesktopEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name, arguments))


def fresh(seed: int = 1000) -> tuple[AppData, Ui]:
    """alice's desktop: the seeded world and an empty screen state."""
    return build_world(seed), Ui()
