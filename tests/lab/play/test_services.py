"""Human play: sessions are human episodes that advance through the runner's step path, resumable and unforkable."""

from __future__ import annotations

from typing import Any

import pytest

from environments import registry
from environments.replay import replay_record
from environments.runner import make_policy, run_episode
from lab.errors import Conflict, DomainError, Forbidden
from lab.live.models import LiveEvent
from lab.play.services import ENV_CACHE, play_env, play_finish, play_session_start, play_submit
from lab.trajectories.models import Episode, Step
from lab.trajectories.services import episode_to_record

pytestmark = pytest.mark.django_db

TASK = "storebench/cash-crunch"


@pytest.fixture
def expert(role_users: dict[str, Any]) -> Any:
    return role_users["expert"]


@pytest.fixture
def session(expert: Any, project_a: Any) -> Any:
    return play_session_start(user=expert, project=project_a, task_id=TASK, seed=1)


def test_starting_a_session_stores_a_running_human_episode_with_the_opening_step(session: Any, expert: Any) -> None:
    episode = session.episode
    assert (episode.source, episode.status, episode.seed, episode.step_count) == ("human", "running", 1, 1)
    assert episode.agent.name == "human:expert-user" and episode.agent.kind == "human"
    header = episode.meta["header"]
    assert header["policy"] == {"name": "human:expert-user", "kind": "human"}
    assert header["env"] == "storebench" and header["task"] == "cash-crunch" and len(header["tools"]) == 29
    first = Step.objects.get(episode=episode, index=0)
    assert first.source == "env" and "online apparel store" in first.message


def test_a_submit_matches_the_model_path_step_for_step(session: Any, expert: Any) -> None:
    """The same two calls through play_submit and through run_episode give identical steps and chain hashes."""
    calls = [("get_finance", {}), ("set_price", {"sku": "P01", "price": 45.0})]
    for i, (name, arguments) in enumerate(calls, start=1):
        play_submit(session=session, user=expert, expected_index=i, name=name, arguments=arguments)

    from environments.core import Action, Policy, ToolCall

    class Script(Policy):
        def __init__(self) -> None:
            self.queue = [Action(tool_calls=[ToolCall(name=n, arguments=a)]) for n, a in calls]

        def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Action:
            return self.queue.pop(0)

    model = run_episode(registry.make(TASK, seed=1), Script(), max_steps=2)
    stored = episode_to_record(Episode.objects.get(pk=session.episode_id))["steps"]
    assert [s["state_hash"] for s in stored] == [s["state_hash"] for s in model["steps"]]
    assert [s["results"] for s in stored] == [s["results"] for s in model["steps"]]
    assert stored[2]["tool_calls"] == [{"id": "call_2_0", "name": "set_price", "arguments": {"sku": "P01", "price": 45.0}}]


def test_an_invalid_call_is_an_error_step_that_costs_budget_like_a_models(session: Any, expert: Any) -> None:
    outcome = play_submit(session=session, user=expert, expected_index=1, name="get_product", arguments={"sku": "P99-ZZZ-M"})
    assert outcome.step["results"][0]["is_error"] is True
    assert "unknown SKU 'P99-ZZZ-M'" in outcome.step["results"][0]["content"]["error"]
    env = play_env(session)
    assert env.world.ops_used == 1  # type: ignore[attr-defined]


def test_a_second_submit_for_a_taken_step_index_is_refused(session: Any, expert: Any) -> None:
    play_submit(session=session, user=expert, expected_index=1, name="get_finance", arguments={})
    with pytest.raises(Conflict) as refused:
        play_submit(session=session, user=expert, expected_index=1, name="get_inventory", arguments={})
    assert refused.value.code == "step_taken" and "step 1 is already taken" in refused.value.message
    assert Step.objects.filter(episode_id=session.episode_id).count() == 2


def test_after_a_restart_the_session_continues_by_replay_in_exactly_the_same_state(session: Any, expert: Any) -> None:
    play_submit(session=session, user=expert, expected_index=1, name="set_price", arguments={"sku": "P02", "price": 30.0})
    play_submit(session=session, user=expert, expected_index=2, name="end_window", arguments={})
    ENV_CACHE.clear()  # what a server restart leaves behind
    outcome = play_submit(session=session, user=expert, expected_index=3, name="get_finance", arguments={})
    assert outcome.replayed is True
    record = episode_to_record(Episode.objects.get(pk=session.episode_id))
    assert replay_record(record)["ok"] is True
    warm = play_submit(session=session, user=expert, expected_index=4, name="get_inventory", arguments={})
    assert warm.replayed is False


def test_a_stale_cache_entry_is_not_trusted(session: Any, expert: Any) -> None:
    play_submit(session=session, user=expert, expected_index=1, name="get_finance", arguments={})
    warm = ENV_CACHE.take(session.episode_id)
    assert warm is not None
    warm.chain = "forged"
    ENV_CACHE.put(session.episode_id, warm)
    assert play_submit(session=session, user=expert, expected_index=2, name="get_finance", arguments={}).replayed is True


def test_each_step_is_published_live_for_spectators(session: Any, expert: Any) -> None:
    play_submit(session=session, user=expert, expected_index=1, name="list_tickets", arguments={})
    kinds = list(LiveEvent.objects.filter(stream=f"episode:{session.episode_id}").values_list("kind", "payload__index"))
    assert kinds == [("status", None), ("step", 0), ("step", 1)]


def test_finishing_scores_with_the_environments_composite(session: Any, expert: Any) -> None:
    play_submit(session=session, user=expert, expected_index=1, name="end_window", arguments={})
    episode = play_finish(session=session, user=expert)
    expected = play_env(session).score()
    assert (episode.status, episode.termination_reason, episode.composite) == ("finished", "agent_stop", expected.composite)
    assert episode.score["components"] == expected.components
    session.refresh_from_db()
    assert session.status == "finished"
    with pytest.raises(Conflict):
        play_submit(session=session, user=expert, expected_index=3, name="get_finance", arguments={})


def test_playing_to_the_horizon_ends_the_episode_like_a_rollout(expert: Any, project_a: Any) -> None:
    """Smart-triage's moves, submitted one by one, end where and how its own rollout ends."""
    env = registry.make(TASK, seed=2)
    model = run_episode(env, make_policy("smart-triage", env, 2))
    session = play_session_start(user=expert, project=project_a, task_id=TASK, seed=2)
    agent_steps = [s for s in model["steps"] if s["source"] == "agent"]
    for step in agent_steps:
        [call] = step["tool_calls"]
        outcome = play_submit(session=session, user=expert, expected_index=step["index"], name=call["name"], arguments=call["arguments"])
    assert outcome.finished is True
    episode = Episode.objects.get(pk=session.episode_id)
    assert episode.termination_reason == model["header"]["termination_reason"]
    assert episode.composite == pytest.approx(model["header"]["score"]["composite"])


def test_only_the_player_may_submit_and_viewers_may_not_start(session: Any, role_users: dict[str, Any], project_a: Any) -> None:
    with pytest.raises(Forbidden):
        play_submit(session=session, user=role_users["researcher"], expected_index=1, name="get_finance", arguments={})
    with pytest.raises(Forbidden):
        play_session_start(user=role_users["viewer"], project=project_a, task_id=TASK, seed=0)


def test_it_rejects_unknown_tasks_and_bad_seeds(expert: Any, project_a: Any) -> None:
    with pytest.raises(DomainError, match="unknown task"):
        play_session_start(user=expert, project=project_a, task_id="storebench/nope", seed=0)
    with pytest.raises(DomainError, match="seed must be"):
        play_session_start(user=expert, project=project_a, task_id=TASK, seed=-3)
