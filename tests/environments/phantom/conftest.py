"""Factories for phantom tests: small tasks, and a minimal episode loop for env-level checks."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Policy, Score, TaskSpec
from environments.phantom.env import PhantomEnv
from environments.trajectory import make_step


def small_task(split: str = "dev", **knobs: Any) -> TaskSpec:
    """A 300-article task: big enough for every question shape, small enough to build in milliseconds."""
    spec = {"hops": [1, 2, 3, 4], "articles": 300, "distractors": 2, "comparison_rate": 0.25, "constraint_rate": 0.3, "max_steps": 24}
    spec.update(knobs)
    return TaskSpec(env="phantom", key=f"test-small-{split}", split=split, description="a small test task", spec=spec)


def play(env: PhantomEnv, policy: Policy, *, max_calls: int = 200) -> tuple[Score, list[dict[str, Any]]]:
    """Run `policy` on a reset `env` with canonical step dicts as history; returns the score and the history."""
    observation = env.reset()
    history = [make_step(index=0, source="env", message=observation.text)]
    while not env.done and len(history) <= max_calls:
        action = policy.act(history, env.tools())
        call = action.tool_calls[0]
        result = env.step(call)
        history.append(
            make_step(
                index=len(history),
                tool_calls=[{"id": call.id, "name": call.name, "arguments": call.arguments}],
                results=[{"call_id": call.id, "content": result.content, "is_error": result.is_error}],
                reward=result.reward,
                state_hash=env.state_hash(),
            )
        )
    return env.score(), history


@pytest.fixture
def alice_env() -> PhantomEnv:
    """A fresh small dev episode, reset."""
    env = PhantomEnv(small_task(), seed=7)
    env.reset()
    return env
