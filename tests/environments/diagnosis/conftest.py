from __future__ import annotations

from typing import Any

import pytest

from environments.core import Env, Policy
from environments.registry import make
from environments.runner import make_policy, run_episode
from tests.environments.diagnosis import ledger  # noqa: F401  (registers the ledger tasks and policies)


def play(task: str, policy: str, seed: int = 0) -> dict[str, Any]:
    env = make(task, seed=seed)
    return run_episode(env, make_policy(policy, env, seed))


def factory(name: str) -> Any:
    def build(env: Env, seed: int) -> Policy:
        return make_policy(name, env, seed)

    return build


@pytest.fixture
def tight_failure() -> dict[str, Any]:
    """ledger/tight played by the stubborn policy: add b 3 (the mistake), read a, submit; fails."""
    return play("ledger/tight", "ledger-stubborn")
