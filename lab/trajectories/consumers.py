"""The websocket stream of an episode's live events (/ws/episodes/<id>/?after=<seq>; lab.live.consumers)."""

from __future__ import annotations

from typing import Any

from lab.live.consumers import LiveStreamConsumer
from lab.trajectories.models import Episode
from lab.trajectories.selectors import episode_in_play_by


class EpisodeStreamConsumer(LiveStreamConsumer):
    kind = "episode"

    def watchable(self, *, user: Any, projects: Any, object_id: int) -> bool:
        # The player of a running session sees it through the play page only (each look charged there).
        episode = Episode.objects.filter(pk=object_id, project__in=projects).only("status", "source", "created_by_id").first()
        return episode is not None and not episode_in_play_by(episode=episode, user=user)
