"""Factories for service-desk tests: a fresh desk for a task and seed, and helpers that act and speak in it."""

from __future__ import annotations

from typing import Any

from environments.core import StepResult, ToolCall
from environments.policies import make_policy
from environments.registry import make
from environments.runner import run_episode
from environments.servicedesk.env import ServiceDeskEnv


def new_desk(task: str = "roaming-on", seed: int = 1, **options: Any) -> ServiceDeskEnv:
    env = make(f"servicedesk/{task}", seed=seed, options=options or None)
    assert isinstance(env, ServiceDeskEnv)
    return env


def do(env: ServiceDeskEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name, arguments))


def verify(env: ServiceDeskEnv) -> None:
    facts = env.goal.facts
    found = do(env, "find_customer", phone=facts["phone"]).content
    assert do(
        env, "verify_identity", customer_id=found["customer_id"], date_of_birth=facts["date_of_birth"], postcode=facts["postcode"]
    ).content["verified"]


def play(task: str, anchor: str, seed: int = 1, **options: Any) -> dict[str, Any]:
    env = new_desk(task, seed, **options)
    return run_episode(env, make_policy(anchor, env, seed))
