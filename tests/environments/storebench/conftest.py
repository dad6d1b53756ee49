"""Factories for StoreBench tests: a fresh store, and a helper that plays a list of calls."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import StepResult, ToolCall
from environments.registry import make
from environments.storebench.env import StoreBenchEnv


def new_store(task: str = "launch-week", seed: int = 5) -> StoreBenchEnv:
    env = make(f"storebench/{task}", seed=seed)
    assert isinstance(env, StoreBenchEnv)
    return env


def do(env: StoreBenchEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name=name, arguments=arguments))


@pytest.fixture
def store() -> StoreBenchEnv:
    return new_store()
