"""A spectator connected to a running rollout gets every step after its commit, once and in order, then resumes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from lab.rollouts.services import anchor_agent_resolve, rollout_launch, rollout_run
from lab.trajectories.services import episode_start, task_resolve
from lab.ws_urls import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


def _communicator(user: Any, episode_id: int, after: int) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/episodes/{episode_id}/?after={after}")
    communicator.scope["user"] = user
    return communicator


def test_a_spectator_watches_a_rollout_live_and_a_late_one_catches_up(alice: Any, project_a: Any) -> None:
    task = task_resolve(project=project_a, env="storebench", key="payment-outage")
    job = rollout_launch(
        project=project_a, agent=anchor_agent_resolve(project=project_a, name="do-nothing"), task=task, seed=1, enqueue=False
    )
    job.episode = episode_start(project=project_a, task=task, source="rollout", seed=1, agent=job.agent)
    job.save(update_fields=["episode"])
    episode_id = job.episode.pk

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        live = _communicator(alice, episode_id, after=0)
        assert (await live.connect())[0]
        run = asyncio.ensure_future(database_sync_to_async(rollout_run)(job_id=job.pk))
        events = []
        while not (events and events[-1]["kind"] == "status" and events[-1]["payload"].get("termination_reason")):
            events.append(await live.receive_json_from(timeout=10))
        await run
        assert await live.receive_nothing(timeout=0.2)
        await live.disconnect()
        late = _communicator(alice, episode_id, after=10)
        assert (await late.connect())[0]
        missed = [await late.receive_json_from(timeout=5) for _ in range(len(events) - 10)]
        assert await late.receive_nothing(timeout=0.2)
        await late.disconnect()
        return events, missed

    events, missed = asyncio.run(scenario())
    steps = [e for e in events if e["kind"] == "step"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # the opening status, each step, the end
    assert [e["payload"]["index"] for e in steps] == list(range(31)) and len(events) == 33
    assert events[-1]["payload"]["termination_reason"] == "horizon_reached"
    assert missed == events[10:]
