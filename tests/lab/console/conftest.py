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
        project=project_a,
        records=[anchor_record("smart-triage"), anchor_record("do-nothing")],
        user=role_users["owner"],
        provenance=Provenance.RECORDED,
    )
    return {"smart": outcomes[0].episode, "idle": outcomes[1].episode}


@pytest.fixture
def login(client: Any) -> Any:
    def as_user(user: Any) -> Any:
        client.force_login(user)
        return client

    return as_user


def team_steps(n_rounds: int = 1) -> list[dict[str, Any]]:
    """A team's turns built by hand, as the runner writes them (environments.team): per round, an actor step, the
    critic's scheduled advice on it, an actor step that consults, the consultant's answer, the next actor step and a
    harness decision."""
    from environments.trajectory import make_step

    steps: list[dict[str, Any]] = []

    def add(**fields: Any) -> None:
        steps.append(make_step(index=len(steps), **fields))

    for r in range(n_rounds):
        add(
            tool_calls=[{"id": f"a{r}", "name": "lookup", "arguments": {"n": r}}],
            results=[{"call_id": f"a{r}", "content": "ok", "is_error": False}],
        )
        add(message=f"Check the supplier first ({r}).", role="critic", meta={"trigger": "schedule", "advises_step": len(steps) - 1})
        ask = len(steps)
        add(
            tool_calls=[{"id": f"q{r}", "name": "consult", "arguments": {"question": "what next?"}}],
            results=[
                {
                    "call_id": f"q{r}",
                    "content": {"suggested_calls": [{"name": "lookup", "arguments": {"n": 9}}], "reasoning": "r"},
                    "is_error": False,
                }
            ],
        )
        add(
            message="lookup n=9",
            role="consultant",
            meta={"answers_call": f"q{r}", "advises_step": ask, "cost": 0.02, "suggested_calls": []},
        )
        add(
            tool_calls=[{"id": f"b{r}", "name": "lookup", "arguments": {"n": 9}}],
            results=[{"call_id": f"b{r}", "content": "ok", "is_error": False}],
        )
        add(source="system", message="Tracker: not used yet: none", role="harness", meta={"decision": "track"})
    return steps


TEAM = {
    "actor": {"policy": {"name": "scripted:smart"}},
    "critic": {"policy": {"name": "rule-critic"}, "every": 1},
    "consultant": {"policy": {"name": "oracle"}, "cost": 0.02},
    "harness_level": "guided",
}


def team_roles(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from environments.roles import step_role

    roles: dict[str, dict[str, Any]] = {}
    for step in steps:
        row = roles.setdefault(step_role(step), {"turns": 0, "tokens": 0, "cost": 0.0, "calls": 0})
        row["turns"] += 1
        row["cost"] += float((step.get("meta") or {}).get("cost") or 0.0)
        row["calls"] += step_role(step) == "consultant"
    return roles


@pytest.fixture
def team_episode(project_a: Any, role_users: dict[str, Any]) -> Any:
    from environments.trajectory import new_record
    from lab.trajectories.services import episodes_ingest

    steps = team_steps(2)
    header = {
        "env": "toyenv",
        "task": "team",
        "seed": 0,
        "source": "upload",
        "policy": {"name": "team-agent"},
        "team": TEAM,
        "roles": team_roles(steps),
    }
    return episodes_ingest(project=project_a, records=[new_record(header=header, steps=steps)], user=role_users["owner"])[0].episode
