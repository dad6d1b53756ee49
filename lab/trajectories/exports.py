"""Dataset exports as JSONL lines, for the API (/api/v1/datasets/export) and the CLI (manage.py export_dataset).

    for line in dataset_export_lines(episodes=qs, view="episode", fmt="openai"): ...   # one conversation per episode
    for line in dataset_export_lines(episodes=qs, view="role", role="critic"): ...     # one example per critic turn

`view=episode` (the default) writes each episode as an OpenAI-style `{"messages", "tools"}` record, or its
canonical record with fmt="native"; an episode with no valid chat rendering is left out of an OpenAI export and
named in a last `{"skipped": [...]}` line. `view=role` gives each role its own training data
(lab.trajectories.roles.role_examples): one line per turn of `role`, with the episode id and provenance.
Coaching notes (meta.coach_note) are privileged: view=episode leaves them out, `view=coach` gives one line per note
with the actor's turn it is about (lab.trajectories.coaching). `view=worldmodel` gives, for episodes of an
environment that declares world-model data (EnvMeta.world_model), one training record per transition (screen +
action -> next screen), rebuilt by a verified replay; other episodes, and ones that cannot be replayed here, are
named in the last `{"skipped": [...]}` line (a divergent replay keeps the transitions before it).
Arguments are checked before any line is produced, so a bad one answers 400 rather than a broken stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from environments.coaching import without_coach_notes
from environments.core import EnvError
from environments.registry import env_meta
from environments.replay import ReplayDivergence
from environments.roles import ROLE_NAME
from lab import ingest
from lab.errors import DomainError
from lab.trajectories import imports
from lab.trajectories.coaching import coach_export_lines
from lab.trajectories.models import Episode
from lab.trajectories.roles import episodes_with_role, role_examples
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episodes_with_headers

VIEWS = ("episode", "role", "coach", "worldmodel")
FORMATS = ("openai", "native")


def dataset_export_lines(*, episodes: QuerySet[Episode], view: str = "episode", fmt: str = "openai", role: str = "") -> Iterator[bytes]:
    if view == "role":
        if not ROLE_NAME.fullmatch(role):
            raise DomainError("invalid_role", f"role={role!r} is not a role name (e.g. critic, consultant, user)", path="role")
        return _role_lines(episodes, role)
    if view == "coach":
        return coach_export_lines(episodes=episodes)
    if view == "worldmodel":
        return _worldmodel_lines(episodes)
    if view != "episode":
        raise DomainError("unknown_view", f"view={view!r}; use {', '.join(VIEWS)}", path="view")
    if fmt not in FORMATS:
        raise DomainError("unknown_format", f"format={fmt!r}; use openai or native", path="format")
    return _episode_lines(episodes, fmt)


def _line(value: Any) -> bytes:
    return (json.dumps(value, separators=(",", ":"), default=str) + "\n").encode()


def _episode_lines(episodes: QuerySet[Episode], fmt: str) -> Iterator[bytes]:
    skipped = []
    for episode, header in episodes_with_headers(episodes.order_by("id").iterator(chunk_size=200)):
        try:
            record = without_coach_notes(episode_to_record(episode, header=header))
            yield imports.export_line(record, fmt=fmt, episode_id=episode.pk, provenance=episode.provenance)
        except ingest.ConversationError as exc:
            skipped.append({"episode_id": episode.pk, "problems": exc.problems})
    if skipped:
        yield _line({"skipped": skipped})


def _role_lines(episodes: QuerySet[Episode], role: str) -> Iterator[bytes]:
    for episode, header in episodes_with_headers(episodes_with_role(episodes, role).order_by("id").iterator(chunk_size=200)):
        for example in role_examples(episode_to_record(episode, header=header), role=role):
            yield _line({"episode_id": episode.pk, "provenance": episode.provenance, **example})


def _worldmodel_lines(episodes: QuerySet[Episode]) -> Iterator[bytes]:
    skipped = []
    for episode, header in episodes_with_headers(episodes.select_related("task").order_by("id").iterator(chunk_size=200)):
        exporter = env_meta(episode.task.env).world_model
        if exporter is None:
            skipped.append({"episode_id": episode.pk, "problems": [f"environment {episode.task.env!r} declares no world-model data"]})
            continue
        try:
            for example in exporter(episode_to_record(episode, header=header)):
                yield _line({"episode_id": episode.pk, "provenance": episode.provenance, **example})
        except (EnvError, ReplayDivergence, ValueError) as exc:
            skipped.append({"episode_id": episode.pk, "problems": [str(getattr(exc, "message", exc))[:300]]})
    if skipped:
        yield _line({"skipped": skipped})
