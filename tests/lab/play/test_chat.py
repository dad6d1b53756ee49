"""Humans on both sides of a conversational environment (tests/lab/play/chatdesk.py, a `user` role slot):
an expert plays the agent and the env's default user answers in the same submit; a person plays the user
against a scripted agent of the project. Both are human episodes that replay exactly and resume."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from environments.replay import replay_record
from lab.errors import Conflict, DomainError, Forbidden
from lab.play.chat import chat_advance, chat_close, chat_reply, chat_session_start
from lab.play.models import HumanSession
from lab.play.services import ENV_CACHE, play_session_start, play_submit
from lab.trajectories.models import AgentConfig, Episode, Step
from lab.trajectories.services import episode_to_record
from tests.lab.play.chatdesk import TASK, chatdesk_registered

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def chatdesk() -> Iterator[None]:
    with chatdesk_registered():
        yield


@pytest.fixture
def clerk(project_a: Any) -> AgentConfig:
    return AgentConfig.objects.create(project=project_a, name="clerk", kind="scripted", model="clerk")


def _said(episode: Episode) -> list[tuple[str, str, str]]:
    rows = Step.objects.filter(episode=episode).exclude(source="env").order_by("index")
    return [(s.role or "actor", s.source, s.message or "") for s in rows]


# --- the expert on the agent's side ------------------------------------------------------------------------


def test_an_experts_message_is_answered_by_the_default_user_in_the_same_submit(role_users: dict[str, Any], project_a: Any) -> None:
    expert = role_users["expert"]
    session = play_session_start(user=expert, project=project_a, task_id=TASK.id, seed=1)
    outcome = play_submit(session=session, user=expert, expected_index=1, name=None, message="Hello, what is your order number?")
    assert [(s["role"], s["source"], s["message"]) for s in outcome.replies] == [("user", "user", "It is O-202.")]
    assert outcome.step["message"] == "Hello, what is your order number?" and not outcome.finished
    outcome = play_submit(
        session=session, user=expert, expected_index=3, name="refund", arguments={"order_id": "O-202"}, message="Your order is refunded."
    )
    episode = Episode.objects.get(pk=session.episode_id)
    assert outcome.finished and outcome.replies == [] and (episode.termination_reason, episode.composite) == ("agent_stop", 1.0)
    record = episode_to_record(episode)
    assert [s.get("role", "actor") for s in record["steps"][1:]] == ["actor", "user", "actor"]
    assert replay_record(record)["ok"]


def test_the_budget_counts_the_experts_steps_not_the_users(role_users: dict[str, Any], project_a: Any) -> None:
    expert = role_users["expert"]
    session = play_session_start(user=expert, project=project_a, task_id=TASK.id, seed=0)
    for turn in range(8):  # max_steps is 8 actor steps; each is followed by a user step
        outcome = play_submit(session=session, user=expert, expected_index=1 + 2 * turn, name=None, message="Hi")
    assert outcome.finished and Episode.objects.get(pk=session.episode_id).termination_reason == "max_steps"
    assert Step.objects.filter(episode_id=session.episode_id, role="user").count() == 8  # the user answers the 8th, as in a rollout


def test_the_play_page_shows_the_conversation_and_a_message_form(client: Any, role_users: dict[str, Any]) -> None:
    client.force_login(role_users["expert"])
    client.post("/play/", {"project": "acme", "task": TASK.id, "seed": "2"})
    session = HumanSession.objects.get()
    response = client.post(f"/play/{session.pk}/submit", {"say": "1", "expected_index": "1", "message": "Your order number?"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert '<li class="role-agent"><strong>agent</strong> <span>Your order number?</span></li>' in html
    assert '<li class="role-user"><strong>user</strong> <span>It is O-303.</span></li>' in html
    assert 'id="say-form"' in html and 'name="expected_index" value="3"' in html
    empty = client.post(f"/play/{session.pk}/submit", {"say": "1", "expected_index": "3", "message": "  "}, **HTMX)
    assert empty.status_code == 422 and "message: write something first" in empty.content.decode()
    stale = client.post(f"/play/{session.pk}/submit", {"say": "1", "expected_index": "1", "message": "again"}, **HTMX)
    assert stale.status_code == 409 and Step.objects.filter(episode_id=session.episode_id).count() == 3


# --- a person in the user's seat ---------------------------------------------------------------------------


def test_a_person_plays_the_user_against_a_scripted_agent_to_the_end(role_users: dict[str, Any], project_a: Any, clerk: Any) -> None:
    person = role_users["expert"]
    session = chat_session_start(user=person, project=project_a, task_id=TASK.id, seed=0, agent="clerk")
    episode = Episode.objects.get(pk=session.episode_id)
    assert (session.role, session.agent, episode.source, episode.agent) == ("user", clerk, "human", clerk)
    assert _said(episode) == [("actor", "agent", "Hello! How can I help you today?")]  # the agent spoke first, then waits
    header = episode.meta["header"]
    assert header["policy"] == {"name": "clerk", "kind": "scripted"}
    assert header["team"]["slots"] == {"user": {"policy": {"name": "human:expert-user", "kind": "human"}, "default": False}}

    outcome = chat_reply(session=session, user=person, expected_index=2, text="I want my money back.")
    assert [(s.get("role"), s["source"]) for s in outcome.steps] == [("user", "human"), (None, "agent")]
    outcome = chat_reply(session=session, user=person, expected_index=4, text="It's O-101")
    episode.refresh_from_db()
    assert outcome.finished and (episode.status, episode.termination_reason, episode.composite) == ("finished", "agent_stop", 1.0)
    assert _said(episode)[1:] == [
        ("user", "human", "I want my money back."),
        ("actor", "agent", "Sure. What is your order number?"),
        ("user", "human", "It's O-101"),
        ("actor", "agent", "Your order O-101 is refunded."),
    ]
    assert replay_record(episode_to_record(episode))["ok"]  # the person's turns replay like a simulated user's
    assert HumanSession.objects.get(pk=session.pk).status == "finished"


def test_a_chat_resumes_by_replay_and_refuses_a_stale_or_early_reply(role_users: dict[str, Any], project_a: Any, clerk: Any) -> None:
    person = role_users["expert"]
    session = chat_session_start(user=person, project=project_a, task_id=TASK.id, seed=1, agent="clerk")
    chat_reply(session=session, user=person, expected_index=2, text="Refund please")
    ENV_CACHE.clear()  # a restarted server: the environment and the agent are rebuilt from the stored steps
    with pytest.raises(Conflict, match="step 2 is already taken"):
        chat_reply(session=session, user=person, expected_index=2, text="again")
    outcome = chat_reply(session=session, user=person, expected_index=4, text="O-202")
    assert outcome.finished and Episode.objects.get(pk=session.episode_id).composite == 1.0
    with pytest.raises(Conflict, match="this conversation ended"):
        chat_reply(session=session, user=person, expected_index=6, text="hello?")
    assert chat_advance(session=session).steps == []


def test_closing_the_conversation_ends_it_as_cancelled_and_scores_it(role_users: dict[str, Any], project_a: Any, clerk: Any) -> None:
    person = role_users["researcher"]
    session = chat_session_start(user=person, project=project_a, task_id=TASK.id, seed=1, agent="clerk")
    episode = chat_close(session=session, user=person)
    assert (episode.status, episode.termination_reason, episode.composite) == ("finished", "cancelled", 0.0)


def test_who_may_play_the_user_and_with_what(role_users: dict[str, Any], project_a: Any, project_b: Any, clerk: Any) -> None:
    with pytest.raises(Forbidden, match="A viewer may not play"):
        chat_session_start(user=role_users["viewer"], project=project_a, task_id=TASK.id, seed=0, agent="clerk")
    with pytest.raises(Forbidden):
        chat_session_start(user=role_users["expert"], project=project_b, task_id=TASK.id, seed=0, agent="clerk")
    with pytest.raises(DomainError, match="agent: no agent 'nobody' in acme"):
        chat_session_start(user=role_users["expert"], project=project_a, task_id=TASK.id, seed=0, agent="nobody")
    with pytest.raises(DomainError, match="has no 'user' role to play; its role slots: none"):
        chat_session_start(user=role_users["expert"], project=project_a, task_id="toolgym/echo", seed=0, agent="clerk")
    AgentConfig.objects.create(project=project_a, name="big-model", kind="openai", model="m", endpoint="openai")
    with pytest.raises(Forbidden, match="big-model runs a model"):
        chat_session_start(user=role_users["expert"], project=project_a, task_id=TASK.id, seed=0, agent="big-model")
    session = chat_session_start(user=role_users["expert"], project=project_a, task_id=TASK.id, seed=0, agent="clerk")
    with pytest.raises(Forbidden, match="Only the expert who started this session"):
        chat_reply(session=session, user=role_users["owner"], expected_index=2, text="hi")
    with pytest.raises(DomainError, match="use its chat page"):
        play_submit(session=session, user=role_users["expert"], expected_index=2, name=None, message="hi")


def test_the_chat_page_shows_the_goal_card_and_answers_a_reply_with_the_agents_turn(
    client: Any, role_users: dict[str, Any], clerk: Any
) -> None:
    client.force_login(role_users["expert"])
    index = client.get("/play/").content.decode()
    assert 'id="play-user"' in index and f'<option value="{TASK.id}"' in index and '<option value="clerk"' in index
    response = client.post("/play/", {"seat": "user", "project": "acme", "task": TASK.id, "agent": "clerk", "seed": "2"})
    session = HumanSession.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/play/{session.pk}/"
    html = client.get(f"/play/{session.pk}/").content.decode()
    assert "You bought a scarf (order O-303) and want a refund." in html and 'id="reply-form"' in html
    assert "refund(" not in html and 'id="tool-refund"' not in html  # the person never sees the agent's tools
    reply = client.post(f"/play/{session.pk}/reply", {"expected_index": "2", "message": "I need a refund"}, **HTMX)
    assert reply.status_code == 200 and "Sure. What is your order number?" in reply.content.decode()
    assert client.post(f"/play/{session.pk}/reply", {"expected_index": "2", "message": "x"}, **HTMX).status_code == 409
    assert client.post(f"/play/{session.pk}/reply", {"expected_index": "oops", "message": "x"}, **HTMX).status_code == 400
    assert client.post(f"/play/{session.pk}/reply", {"expected_index": "4", "message": ""}, **HTMX).status_code == 422
    bad = client.post("/play/", {"seat": "user", "project": "acme", "task": TASK.id, "agent": "ghost", "seed": "2"})
    assert bad.status_code == 400 and "agent: no agent &#x27;ghost&#x27; in acme" in bad.content.decode()
    client.force_login(role_users["owner"])  # another member spectates in the episode viewer
    assert client.get(f"/play/{session.pk}/")["Location"] == f"/episodes/{session.episode_id}/"
    assert client.post(f"/play/{session.pk}/reply", {"expected_index": "4", "message": "hi"}).status_code == 403
    client.force_login(role_users["expert"])
    closed = client.post(f"/play/{session.pk}/close")
    assert closed.status_code == 302 and Episode.objects.get(pk=session.episode_id).termination_reason == "cancelled"
