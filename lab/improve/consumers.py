"""The websocket stream of a loop's stage and progress events (/ws/loops/<id>/?after=<seq>), as runs and episodes have."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from lab.live.consumers import LiveStreamConsumer
from lab.projects.selectors import project_list_for


class LoopStreamConsumer(LiveStreamConsumer):
    kind = "loop"

    @database_sync_to_async
    def _may_watch(self, user: Any, object_id: int) -> bool:
        from lab.improve.models import ImprovementLoop

        if user is not None and getattr(user, "pk", None) is not None:
            user.refresh_from_db(fields=["is_active"])
            if not user.is_active:
                return False
        return ImprovementLoop.objects.filter(pk=object_id, project__in=project_list_for(user=user)).exists()
