"""Websocket streams of an episode's or a run's live events, resumable with `?after=<seq>` (the base consumer; each
app's subclass, routed in lab/ws_urls.py, says who may watch its objects).

Exactly once and in order: the consumer joins the group first, then replays stored events after `after`,
then forwards live ones. It remembers the last seq it sent: a live event at or below it is a duplicate and
dropped; one that skips ahead means something was missed, so it reads the gap from the database first.

Access is checked at connect, again before each live event is sent, and every PRACTICUM_LIVE_ACCESS_CHECK_S
seconds on a quiet stream: a member removed from the project (or whose user was deactivated) is closed with
code 4403 at the next event or check. Bad URLs close with 4400 (a malformed `after`) or 4403 (no such stream
that you may watch).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from lab.edge import INT64_MAX, int_param
from lab.errors import DomainError
from lab.live.services import group_name, live_events_after
from lab.projects.selectors import project_list_for


class LiveStreamConsumer(AsyncJsonWebsocketConsumer):
    kind: str = ""  # "episode" | "run" | "loop": the stream is "<kind>:<id>"

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        self.object_id = int(self.scope["url_route"]["kwargs"]["pk"])
        if not await self._may_watch(self.user, self.object_id):
            await self.close(code=4403)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode(errors="replace"))
        try:
            self.last_seq = max(0, int_param(query.get("after", ["0"])[0], name="after", high=INT64_MAX))
        except DomainError:
            await self.close(code=4400)
            return
        self.stream = f"{self.kind}:{self.object_id}"
        self.group = group_name(self.stream)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.watchdog = asyncio.ensure_future(self._recheck_access_periodically())
        await self._catch_up()

    async def disconnect(self, code: int) -> None:
        watchdog = getattr(self, "watchdog", None)
        if watchdog is not None:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def _still_allowed(self) -> bool:
        """False (and the socket closed with 4403) once the user may no longer watch this stream."""
        if await self._may_watch(self.user, self.object_id):
            return True
        await self.channel_layer.group_discard(self.group, self.channel_name)
        self.group = ""
        await self.close(code=4403)
        return False

    async def _recheck_access_periodically(self) -> None:
        while True:
            await asyncio.sleep(settings.PRACTICUM_LIVE_ACCESS_CHECK_S)
            if not await self._still_allowed():
                return

    async def live_event(self, message: dict[str, Any]) -> None:
        if not self.group or not await self._still_allowed():
            return
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
        if user is not None and getattr(user, "pk", None) is not None:
            user.refresh_from_db(fields=["is_active"])  # the scope's user is read once, at connect
            if not user.is_active:
                return False
        return self.watchable(user=user, projects=project_list_for(user=user), object_id=object_id)

    def watchable(self, *, user: Any, projects: Any, object_id: int) -> bool:
        """Whether `user`, a member of `projects`, may watch object `object_id`: each app's consumer says, for its
        own objects (lab.trajectories.consumers, lab.runs.consumers), so this app imports none of them."""
        raise NotImplementedError(f"{type(self).__name__} must say who may watch a {self.kind}")
