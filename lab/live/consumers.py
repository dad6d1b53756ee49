"""Websocket streams of an episode's or a run's live events, resumable with `?after=<seq>`.

Exactly once and in order: the consumer joins the group first, then replays stored events after `after`,
then forwards live ones. It remembers the last seq it sent: a live event at or below it is a duplicate and
dropped; one that skips ahead means something was missed, so it reads the gap from the database first.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from lab.live.services import group_name, live_events_after
from lab.projects.selectors import project_list_for


class LiveStreamConsumer(AsyncJsonWebsocketConsumer):
    kind: str = ""  # "episode" | "run"

    async def connect(self) -> None:
        user = self.scope.get("user")
        object_id = int(self.scope["url_route"]["kwargs"]["pk"])
        if not await self._may_watch(user, object_id):
            await self.close(code=4403)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            self.last_seq = max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            await self.close(code=4400)
            return
        self.stream = f"{self.kind}:{object_id}"
        self.group = group_name(self.stream)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._catch_up()

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def live_event(self, message: dict[str, Any]) -> None:
        event = message["event"]
        if event["seq"] <= self.last_seq:
            return
        if event["seq"] > self.last_seq + 1:
            await self._catch_up()
            if event["seq"] <= self.last_seq:
                return
        await self._send_event(event)

    async def _catch_up(self) -> None:
        while True:
            missed = await database_sync_to_async(live_events_after)(stream=self.stream, after=self.last_seq)
            for event in missed:
                await self._send_event(event)
            if len(missed) < 1000:
                return

    async def _send_event(self, event: dict[str, Any]) -> None:
        self.last_seq = event["seq"]
        await self.send_json(event)

    @database_sync_to_async
    def _may_watch(self, user: Any, object_id: int) -> bool:
        projects = project_list_for(user=user)
        if self.kind == "episode":
            from lab.trajectories.models import Episode

            return Episode.objects.filter(pk=object_id, project__in=projects).exists()
        from lab.runs.models import TrainingRun

        return TrainingRun.objects.filter(pk=object_id, project__in=projects).exists()


class EpisodeStreamConsumer(LiveStreamConsumer):
    kind = "episode"


class RunStreamConsumer(LiveStreamConsumer):
    kind = "run"
