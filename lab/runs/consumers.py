"""The websocket stream of a training run's live events (/ws/runs/<id>/?after=<seq>; lab.live.consumers)."""

from __future__ import annotations

from typing import Any

from lab.live.consumers import LiveStreamConsumer
from lab.runs.models import TrainingRun


class RunStreamConsumer(LiveStreamConsumer):
    kind = "run"

    def watchable(self, *, user: Any, projects: Any, object_id: int) -> bool:
        return TrainingRun.objects.filter(pk=object_id, project__in=projects).exists()
