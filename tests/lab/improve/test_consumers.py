"""The loop's live stream on /ws/loops/<id>/: members watch its stage events from `after`; strangers are refused."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from lab.live.services import live_publish
from lab.ws_urls import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)


def _connect(user: Any, loop_id: int, after: int = 0) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/loops/{loop_id}/?after={after}")
    communicator.scope["user"] = user
    return communicator


def test_a_member_replays_the_loops_events_after_a_seq_and_a_stranger_is_refused(alice: Any, bob: Any, promotable_loop: Any) -> None:
    stream = f"loop:{promotable_loop.pk}"
    for stage in ("diagnose", "dataset"):
        live_publish(
            stream=stream, kind="stage", payload={"stage": stage, "status": "running", "progress": 0.0, "message": f"{stage} started"}
        )

    async def scenario() -> None:
        watcher = _connect(alice, promotable_loop.pk, after=1)
        connected, _ = await watcher.connect()
        assert connected
        events = [await watcher.receive_json_from(timeout=5) for _ in range(2)]
        assert [(e["seq"], e["payload"]["stage"]) for e in events] == [(2, "diagnose"), (3, "dataset")]  # seq 1: created, queued
        await watcher.disconnect()
        intruder = _connect(bob, promotable_loop.pk)
        connected, code = await intruder.connect()
        assert not connected and code == 4403

    async_to_sync(scenario)()
