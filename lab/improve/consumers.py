"""The websocket stream of a loop's stage and progress events (/ws/loops/<id>/?after=<seq>), as runs and episodes have."""

from __future__ import annotations

from typing import Any

from lab.improve.models import ImprovementLoop
from lab.live.consumers import LiveStreamConsumer


class LoopStreamConsumer(LiveStreamConsumer):
    kind = "loop"

    def watchable(self, *, user: Any, projects: Any, object_id: int) -> bool:
        return ImprovementLoop.objects.filter(pk=object_id, project__in=projects).exists()
