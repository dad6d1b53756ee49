"""Factories for graphcert tests: a small task, an episode built on it, and a call helper."""

from __future__ import annotations

from typing import Any

from environments.core import StepResult, TaskSpec, ToolCall
from environments.graphcert.env import GraphCertEnv


def small_task(split: str = "dev", **knobs: Any) -> TaskSpec:
    """A 300-article universe with every question shape: builds in milliseconds."""
    spec = {"hops": [1, 2, 3], "articles": 300, "comparison_rate": 0.25, "constraint_rate": 0.3, "max_steps": 16}
    spec.update(knobs)
    return TaskSpec(env="graphcert", key=f"test-small-{split}", split=split, description="a small test task", spec=spec)


def episode(seed: int = 7, **knobs: Any) -> GraphCertEnv:
    env = GraphCertEnv(small_task(**knobs), seed)
    env.reset()
    return env


def call(env: GraphCertEnv, tool: str, /, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name=tool, arguments=arguments))
