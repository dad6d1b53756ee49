"""Options-desk test helpers: a fresh desk for a period and seed, and a one-line tool call."""

from __future__ import annotations

from typing import Any

from environments.core import StepResult, ToolCall
from environments.optionsdesk.env import OptionsDeskEnv
from environments.registry import make


def new_desk(period: str = "oos", seed: int = 1000, **options: Any) -> OptionsDeskEnv:
    env = make(f"optionsdesk/{period}", seed=seed, options=options or None)
    assert isinstance(env, OptionsDeskEnv)
    return env


def do(env: OptionsDeskEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name, arguments))
