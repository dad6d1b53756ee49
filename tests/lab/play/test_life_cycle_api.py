"""A session's life cycle reads the same on the API as on every page: the episode's `life_cycle` (running, finished,
cancelled, abandoned), its end reason, whether success rates count it, and the play session beside it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from lab.play.models import HumanSession

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def session(client: Any, role_users: dict[str, Any]) -> HumanSession:
    client.force_login(role_users["expert"])
    assert client.post("/play/", {"project": "acme", "task": "storebench/cash-crunch", "seed": "3"}).status_code == 302
    session = HumanSession.objects.get()
    client.post(f"/play/{session.pk}/submit", {"tool": "get_finance", "expected_index": "1"}, **HTMX)
    return session


def _row(alice_api: Any, episode_id: int) -> dict[str, Any]:
    rows = alice_api.get("/api/v1/episodes/?source=human").json()["results"]
    return next(row for row in rows if row["id"] == episode_id)


def test_a_running_session_reads_running_with_its_seat_and_player(alice_api: Any, session: HumanSession) -> None:
    row = _row(alice_api, session.episode_id)
    assert (row["status"], row["life_cycle"], row["termination_reason"], row["counted"]) == ("running", "running", "", False)
    assert row["session"] == {
        "id": session.pk,
        "seat": "actor",
        "player": "expert-user",
        "agent": None,
        "budget_used": 1,
        "last_active_at": row["session"]["last_active_at"],
        "life_cycle": "running",
    }


def test_a_finished_session_is_counted_and_an_abandoned_one_is_set_apart(
    client: Any, alice_api: Any, session: HumanSession, settings: Any
) -> None:
    client.post(f"/play/{session.pk}/finish", **HTMX)
    row = _row(alice_api, session.episode_id)
    assert (row["life_cycle"], row["termination_reason"], row["counted"], row["session"]["life_cycle"]) == (
        "finished",
        "agent_stop",
        True,
        "finished",
    )
    assert alice_api.get(f"/api/v1/episodes/{session.episode_id}/").json()["life_cycle"] == "finished"

    assert client.post("/play/", {"project": "acme", "task": "storebench/cash-crunch", "seed": "4"}).status_code == 302
    idle = HumanSession.objects.exclude(pk=session.pk).get()
    HumanSession.objects.filter(pk=idle.pk).update(
        last_active_at=timezone.now() - timedelta(minutes=settings.PRACTICUM_PLAY_IDLE_MINUTES + 1)
    )
    client.get("/play/")  # the play page sweeps idle sessions
    row = _row(alice_api, idle.episode_id)
    assert (row["status"], row["life_cycle"], row["termination_reason"], row["counted"], row["composite"]) == (
        "abandoned",
        "abandoned",
        "abandoned",
        False,
        None,
    )
    assert row["session"]["life_cycle"] == "abandoned"
    abandoned = alice_api.get("/api/v1/episodes/?status=abandoned").json()["results"]
    assert [r["id"] for r in abandoned] == [idle.episode_id]


def test_a_cancelled_rollout_reads_cancelled_and_is_not_counted(alice_api: Any, project_a: Any) -> None:
    from lab.rollouts.services import rollout_launch, rollout_run
    from lab.trajectories.models import AgentConfig
    from lab.trajectories.services import episode_finish, episode_start

    agent = AgentConfig.objects.create(project=project_a, name="triage", kind="scripted", model="smart-triage")
    done = rollout_launch(project=project_a, agent=agent, task="storebench/cash-crunch", seed=1, enqueue=False)
    rollout_run(job_id=done.pk)
    done.refresh_from_db()
    stopped = episode_start(project=project_a, task=done.task, source="rollout", seed=2, agent=agent)
    episode_finish(episode=stopped, reason="cancelled", score={"composite": 0.4, "passed": False}, reward=0.4)
    rows = {r["id"]: r for r in alice_api.get("/api/v1/episodes/?source=rollout").json()["results"]}
    assert (rows[done.episode_id]["life_cycle"], rows[done.episode_id]["counted"], rows[done.episode_id]["session"]) == (
        "finished",
        True,
        None,
    )
    assert (rows[stopped.pk]["status"], rows[stopped.pk]["life_cycle"], rows[stopped.pk]["termination_reason"]) == (
        "finished",
        "cancelled",
        "cancelled",
    )
    assert rows[stopped.pk]["counted"] is False
    assert [r["id"] for r in alice_api.get("/api/v1/episodes/?status=cancelled").json()["results"]] == [stopped.pk]


def test_the_schema_names_the_life_cycles(alice_api: Any) -> None:
    text = alice_api.get("/api/v1/schema/").content.decode()
    assert "life_cycle" in text and "counted" in text and "abandoned" in text
