"""Coaching notes on stored episodes: written by the API and `manage.py coach_episodes`, kept in the user steps'
meta, left out of the actor's exports and given only by the dataset export's view=coach."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from environments import registry
from environments.policies import make_policy
from environments.runner import run_episode
from lab.trajectories.models import Episode, Provenance, Step
from lab.trajectories.services import episodes_ingest
from tests.lab.play.chatdesk import TASK, chatdesk_registered

pytestmark = pytest.mark.django_db
NOTE = "Ask for or offer that"


@pytest.fixture(autouse=True)
def chatdesk() -> Iterator[None]:
    with chatdesk_registered():
        yield


@pytest.fixture
def episode(alice: Any, project_a: Any) -> Episode:
    env = registry.make(TASK.id, seed=1)
    record = run_episode(env, make_policy("clerk", env, 1))
    [outcome] = episodes_ingest(project=project_a, records=[record], user=alice, provenance=Provenance.RECORDED)
    return outcome.episode


def _lines(client: Any, query: str) -> list[dict[str, Any]]:
    body = b"".join(client.get(f"/api/v1/datasets/export?{query}").streaming_content)
    return [json.loads(line) for line in body.splitlines()]


def test_the_api_coaches_an_episode_and_only_view_coach_exports_the_notes(alice_api: Any, episode: Episode) -> None:
    response = alice_api.post(f"/api/v1/episodes/{episode.pk}/coach/", {"coach": "rule-coach"}, format="json")
    assert response.status_code == 200, response.content
    notes = response.json()["notes"]
    assert [(n["step"], n["anticipates_step"]) for n in notes] == [(2, 1), (4, 3)] and NOTE in notes[0]["note"]
    stored = Step.objects.get(episode=episode, index=4).extra["meta"]["coach_note"]
    assert stored["note"].startswith("The user was about to say \u201cIt is O-202.\u201d")

    for query in ("view=episode&format=openai", "view=episode&format=native"):
        assert NOTE not in json.dumps(_lines(alice_api, query))  # the actor's exports never carry a note
    assert NOTE not in json.dumps(alice_api.get(f"/api/v1/episodes/{episode.pk}/export/?format=native").json())
    coach = _lines(alice_api, "view=coach")
    assert [(c["episode_id"], c["step"], c["user_step"]) for c in coach] == [(episode.pk, 1, 2), (episode.pk, 3, 4)]
    assert coach[1]["turn"]["message"] == "Sure. What is your order number?" and NOTE in coach[1]["note"]
    assert [(m["role"], m["content"]) for m in coach[1]["messages"]][1:] == [
        ("assistant", "Hello! How can I help you today?"),
        ("user", "I want a refund."),
    ]
    assert NOTE not in json.dumps(coach[1]["messages"])  # the teacher's prompt is the actor's, the note beside it


def test_coaching_needs_a_writer_a_known_coach_and_a_finished_episode(
    api: Any, role_users: dict[str, Any], project_a: Any, episode: Episode
) -> None:
    expert = api(role_users["expert"], project_a)
    assert expert.post(f"/api/v1/episodes/{episode.pk}/coach/", {"coach": "rule-coach"}, format="json").status_code == 403
    owner = api(role_users["owner"], project_a)
    bad = owner.post(f"/api/v1/episodes/{episode.pk}/coach/", {"coach": "nobody"}, format="json")
    assert bad.status_code == 400 and "coach: 'nobody' is neither an agent of the project" in bad.json()["error"]["message"]
    assert owner.post(f"/api/v1/episodes/{episode.pk}/coach/", ["x"], format="json").status_code == 400
    Episode.objects.filter(pk=episode.pk).update(status="running")
    assert owner.post(f"/api/v1/episodes/{episode.pk}/coach/", {"coach": "rule-coach"}, format="json").status_code == 409


def test_the_command_coaches_every_finished_episode_with_a_user(episode: Episode, project_a: Any) -> None:
    out = StringIO()
    call_command("coach_episodes", "--project", "acme", "--coach", "rule-coach", stdout=out)
    assert out.getvalue().strip().endswith("2 notes on 1 episodes")
    assert "coach_note" in Step.objects.get(episode=episode, index=2).extra["meta"]
    with pytest.raises(CommandError, match="--project: no project 'nope'"):
        call_command("coach_episodes", "--project", "nope", "--coach", "rule-coach")
