"""Episodes of real StoreBench play for the page tests: anchors run once per session, stored per test."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from environments import registry
from environments.runner import make_policy, run_episode

TASK = "storebench/cash-crunch"


@functools.cache
def anchor_record(policy: str, seed: int = 0) -> dict[str, Any]:
    env = registry.make(TASK, seed=seed)
    return run_episode(env, make_policy(policy, env, seed), max_steps=None if policy == "smart-triage" else 60)


@pytest.fixture
def store_episodes(project_a: Any, role_users: dict[str, Any]) -> dict[str, Any]:
    """smart-triage (finished, scored) and do-nothing (cut at 60 steps) on cash-crunch seed 0, in project A."""
    from lab.trajectories.models import Provenance
    from lab.trajectories.services import episodes_ingest

    # The anchors ran here, in-process: stored as the server's own recordings, as its rollouts would be.
    outcomes = episodes_ingest(
        project=project_a, records=[anchor_record("smart-triage"), anchor_record("do-nothing")], user=role_users["owner"],
        provenance=Provenance.RECORDED,
    )  # fmt: skip
    return {"smart": outcomes[0].episode, "idle": outcomes[1].episode}


@pytest.fixture
def login(client: Any) -> Any:
    def as_user(user: Any) -> Any:
        client.force_login(user)
        return client

    return as_user
