"""manage.py abandon_idle_sessions: end every play session idle for PRACTICUM_PLAY_IDLE_MINUTES as abandoned.

The play pages run the same sweep on every visit; this is for a cron line, so sessions end on time on a console
nobody is playing on."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.play.services import play_sessions_abandon_idle


class Command(BaseCommand):
    help = "End play sessions idle for PRACTICUM_PLAY_IDLE_MINUTES as abandoned (unscored, kept out of success rates)."

    def handle(self, *args: Any, **options: Any) -> None:
        ended = play_sessions_abandon_idle()
        self.stdout.write(f"{ended} session(s) idle for over {settings.PRACTICUM_PLAY_IDLE_MINUTES} minutes ended as abandoned")
