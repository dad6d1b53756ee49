"""Coaching notes on stored episodes (environments.coaching), as the exports read them.

    for line in coach_export_lines(episodes=qs): ...               # view=coach: one line per note, with the actor's turn

Writing notes (lab.diagnoses.coaching.episode_coach: the API and `manage.py coach_episodes`) builds a coach from an
agent config, which is the diagnoses app's work above this one; reading them needs only the stored steps.

A note is stored in the user step's meta (meta.coach_note) and is privileged: the episode views and exports an
actor trains on (dataset view=episode, an episode's export) leave it out; only view=coach gives it, with what a
teacher needs to condition on it: the actor's prompt at the anticipating turn (OpenAI messages), the turn itself
and the note. Coaching a finished episode again replaces its notes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from environments.coaching import coach_notes, without_coach_notes
from environments.records import Record
from lab import ingest
from lab.trajectories import imports
from lab.trajectories.models import Episode
from lab.trajectories.services import episode_to_record


def _line(value: Any) -> bytes:
    return (json.dumps(value, separators=(",", ":"), default=str) + "\n").encode()


def coach_export_lines(*, episodes: QuerySet[Episode]) -> Iterator[bytes]:
    """One line per note: {"episode_id", "provenance", "step" (the actor turn), "user_step", "note", "coach",
    "messages" (the actor's prompt before that turn, OpenAI-style, without any note), "turn" (the actor's step)}."""
    for episode in episodes.filter(steps__role="user").distinct().order_by("id").iterator(chunk_size=200):
        record = episode_to_record(episode)
        notes = coach_notes(record)
        if not notes:
            continue
        plain = without_coach_notes(record)
        for note in notes:
            actor = note["anticipates_step"]
            prefix: Record = {**plain, "steps": [s for s in plain["steps"] if s["index"] < actor]}
            try:
                messages = imports.export_openai(prefix)["messages"]
            except ingest.ConversationError:
                messages = []
            turn = next((s for s in plain["steps"] if s["index"] == actor), None)
            yield _line(
                {
                    "episode_id": episode.pk,
                    "provenance": episode.provenance,
                    "step": actor,
                    "user_step": note["step"],
                    "note": note["note"],
                    "coach": note["coach"],
                    "messages": messages,
                    "turn": turn,
                }
            )
