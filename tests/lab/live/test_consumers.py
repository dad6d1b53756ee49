"""Websocket streams: live steps arrive after commit; reconnecting with after= resumes; each event exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from lab.live.models import LiveEvent
from lab.live.services import group_name
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, task_resolve
from lab.ws_urls import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


def _start(project: Any, user: Any) -> Any:
    task = task_resolve(project=project, env="toyenv", key="live-task")
    return episode_start(project=project, task=task, source="rollout", seed=7, user=user)


def _step(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "source": "agent",
        "message": f"step {index}",
        "tool_calls": [{"id": f"c{index}", "name": "noop", "arguments": {}}],
        "results": [{"call_id": f"c{index}", "content": "ok", "is_error": False}],
    }


def _connect(user: Any, episode_id: int, after: int | None = None) -> WebsocketCommunicator:
    path = f"/ws/episodes/{episode_id}/" + (f"?after={after}" if after is not None else "")
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    communicator.scope["user"] = user
    return communicator


async def _receive(communicator: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    return [await communicator.receive_json_from(timeout=5) for _ in range(count)]


def test_live_steps_arrive_in_order_and_resume_after_reconnect_exactly_once(alice: Any, project_a: Any) -> None:
    episode = _start(project_a, alice)
    append = database_sync_to_async(lambda i: episode_append_step(episode=episode, step=_step(i)))

    async def scenario() -> None:
        first = _connect(alice, episode.pk, after=0)
        connected, _ = await first.connect()
        assert connected
        [status] = await _receive(first, 1)
        assert (status["seq"], status["kind"], status["payload"]["status"]) == (1, "status", "running")
        await append(0)
        await append(1)
        live = await _receive(first, 2)
        assert [(e["seq"], e["kind"], e["payload"]["index"]) for e in live] == [(2, "step", 0), (3, "step", 1)]
        assert await first.receive_nothing(timeout=0.2)
        await first.disconnect()

        await append(2)  # while nobody watches
        await append(3)

        second = _connect(alice, episode.pk, after=3)
        assert (await second.connect())[0]
        missed = await _receive(second, 2)
        assert [e["seq"] for e in missed] == [4, 5]
        assert [e["payload"]["index"] for e in missed] == [2, 3]
        await append(4)
        [now] = await _receive(second, 1)
        assert (now["seq"], now["payload"]["index"]) == (6, 4)
        assert await second.receive_nothing(timeout=0.2)
        await second.disconnect()

    async_to_sync(scenario)()


def test_duplicates_are_dropped_and_gaps_are_filled_from_the_log(alice: Any, project_a: Any) -> None:
    episode = _start(project_a, alice)  # seq 1
    layer = get_channel_layer()

    async def scenario() -> None:
        watcher = _connect(alice, episode.pk, after=1)
        assert (await watcher.connect())[0]
        await database_sync_to_async(episode_append_step)(episode=episode, step=_step(0))  # seq 2, live
        [two] = await _receive(watcher, 1)
        assert two["seq"] == 2
        # A publish delivered twice (a retried send) must not reach the client twice.
        stale = await database_sync_to_async(lambda: LiveEvent.objects.get(stream=f"episode:{episode.pk}", seq=2).as_message())()
        await layer.group_send(group_name(f"episode:{episode.pk}"), {"type": "live.event", "event": stale})
        assert await watcher.receive_nothing(timeout=0.2)
        # A lost publish: seq 3 is stored but never sent; seq 4 arrives live, so the consumer reads 3 first.
        await database_sync_to_async(
            lambda: LiveEvent.objects.create(stream=f"episode:{episode.pk}", seq=3, kind="note", payload={"n": 3})
        )()
        four = {"stream": f"episode:{episode.pk}", "seq": 4, "kind": "note", "payload": {"n": 4}}
        await database_sync_to_async(lambda: LiveEvent.objects.create(stream=four["stream"], seq=4, kind="note", payload={"n": 4}))()
        await layer.group_send(group_name(f"episode:{episode.pk}"), {"type": "live.event", "event": four})
        got = await _receive(watcher, 2)
        assert [e["seq"] for e in got] == [3, 4]
        await watcher.disconnect()

    async_to_sync(scenario)()


def test_finishing_publishes_the_status_with_the_score(alice: Any, project_a: Any) -> None:
    episode = _start(project_a, alice)
    episode_finish(episode=episode, reason="horizon_reached", score={"composite": 0.75, "passed": True, "components": {}})

    async def scenario() -> None:
        watcher = _connect(alice, episode.pk)
        assert (await watcher.connect())[0]
        events = await _receive(watcher, 2)
        assert events[1]["payload"] == {
            "status": "finished",
            "life_cycle": "finished",
            "termination_reason": "horizon_reached",
            "composite": 0.75,
            "passed": True,
        }
        await watcher.disconnect()

    async_to_sync(scenario)()


def test_a_user_of_another_project_cannot_watch(alice: Any, bob: Any, project_a: Any) -> None:
    episode = _start(project_a, alice)

    async def scenario() -> None:
        intruder = _connect(bob, episode.pk)
        connected, code = await intruder.connect()
        assert not connected and code == 4403

    async_to_sync(scenario)()


def test_a_bad_after_value_is_refused(alice: Any, project_a: Any) -> None:
    episode = _start(project_a, alice)

    async def scenario() -> None:
        communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/episodes/{episode.pk}/?after=abc")
        communicator.scope["user"] = alice
        connected, code = await communicator.connect()
        assert not connected and code == 4400

    async_to_sync(scenario)()


async def _closed_with(communicator: WebsocketCommunicator) -> int | None:
    """The close code the server sent, skipping any events that came before it."""
    while True:
        output = await communicator.receive_output(timeout=5)
        if output["type"] == "websocket.close":
            return output.get("code")


@pytest.mark.parametrize("loss", ["removed", "deactivated"])
def test_a_watcher_who_loses_access_is_closed_at_the_next_event(make_user: Any, alice: Any, project_a: Any, loss: str) -> None:
    from lab.projects.models import Membership
    from lab.projects.services import membership_set

    carol = make_user("carol")
    membership_set(project=project_a, user=carol, role="viewer")
    episode = _start(project_a, alice)

    def revoke() -> None:
        if loss == "removed":
            Membership.objects.filter(project=project_a, user=carol).delete()
        else:
            type(carol).objects.filter(pk=carol.pk).update(is_active=False)

    async def scenario() -> None:
        watcher = _connect(carol, episode.pk, after=0)
        assert (await watcher.connect())[0]
        await _receive(watcher, 1)  # the status event
        await database_sync_to_async(episode_append_step)(episode=episode, step=_step(0))
        assert (await _receive(watcher, 1))[0]["seq"] == 2  # still a member: the step arrives
        await database_sync_to_async(revoke)()
        await database_sync_to_async(episode_append_step)(episode=episode, step=_step(1))
        assert await _closed_with(watcher) == 4403
        await watcher.disconnect()

    async_to_sync(scenario)()
    assert LiveEvent.objects.filter(stream=f"episode:{episode.pk}").count() == 3  # the event was stored, only not sent


def test_a_quiet_stream_closes_once_the_watcher_loses_access(make_user: Any, alice: Any, project_a: Any, settings: Any) -> None:
    from lab.projects.models import Membership
    from lab.projects.services import membership_set

    settings.PRACTICUM_LIVE_ACCESS_CHECK_S = 0.05  # the periodic check, made fast for the test
    carol = make_user("carol")
    membership_set(project=project_a, user=carol, role="viewer")
    episode = _start(project_a, alice)

    async def scenario() -> None:
        watcher = _connect(carol, episode.pk, after=0)
        assert (await watcher.connect())[0]
        await _receive(watcher, 1)
        assert await watcher.receive_nothing(timeout=0.2)  # checks pass while she is a member
        await database_sync_to_async(Membership.objects.filter(project=project_a, user=carol).delete)()
        assert await _closed_with(watcher) == 4403  # no event needed
        await watcher.disconnect()

    async_to_sync(scenario)()


def test_the_player_of_a_running_human_episode_cannot_watch_it_until_it_ends(alice: Any, project_a: Any) -> None:
    """Its step events would be free reads beside the play page; once finished it streams like any episode."""
    task = task_resolve(project=project_a, env="toyenv", key="live-task")
    episode = episode_start(project=project_a, task=task, source="human", seed=7, user=alice)

    async def refused() -> None:
        connected, code = await _connect(alice, episode.pk).connect()
        assert not connected and code == 4403

    async_to_sync(refused)()
    episode_finish(episode=episode, reason="agent_stop", score={"composite": 0.0}, reward=0.0)

    async def allowed() -> None:
        communicator = _connect(alice, episode.pk)
        connected, _ = await communicator.connect()
        assert connected
        await communicator.disconnect()

    async_to_sync(allowed)()
