"""Coaching notes written on stored episodes (environments.coaching): the API and `manage.py coach_episodes`.

    notes = episode_coach(episode=e, coach="rule-coach", user=u)   # a scripted coach, or an agent config of the project

A note is stored in the user step's meta (meta.coach_note) and is privileged (lab.trajectories.coaching exports it
for view=coach only). Here, not in trajectories: the coach is built from an agent config (lab.diagnoses.policies),
like a diagnoser. Coaching a finished episode again replaces its notes.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from environments.coaching import NOTE_KEY, coach_episode, coach_notes
from environments.core import EnvError, Policy
from environments.policies import make_policy
from environments.replay import env_for_header
from lab.diagnoses.policies import policy_factory_for_agent
from lab.errors import Conflict, DomainError, Forbidden
from lab.projects.models import WRITE_ROLES
from lab.projects.selectors import role_in
from lab.trajectories.models import AgentConfig, Episode, EpisodeStatus, Step
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episode_header


def _coach_policy(episode: Episode, coach: str) -> Policy:
    """An agent config of the episode's project named `coach` (an LLM with role "coach"), else a scripted coach."""
    header = episode_header(episode)
    try:
        env = env_for_header({**header, "env": episode.task.env, "task": episode.task.key, "seed": episode.seed or 0})
    except EnvError as exc:
        raise DomainError("env_unavailable", f"episode {episode.pk}: {exc}", status=409) from None
    config = AgentConfig.objects.filter(project_id=episode.project_id, name=coach).first()
    if config is not None:
        return policy_factory_for_agent(config)(env, episode.seed or 0)
    try:
        return make_policy(coach, env, episode.seed or 0)
    except EnvError:
        raise DomainError(
            "unknown_coach", f"coach: {coach[:80]!r} is neither an agent of the project nor a scripted coach (rule-coach)", path="coach"
        ) from None


def episode_coach(*, episode: Episode, coach: str, user: Any = None) -> list[dict[str, Any]]:
    """Write a coaching note on each user turn of a finished episode; returns the notes. `user` None: the operator (CLI)."""
    if user is not None and role_in(user=user, project=episode.project_id) not in WRITE_ROLES:
        raise Forbidden("forbidden", "Only researchers and owners may coach episodes.")
    if not isinstance(coach, str) or not coach.strip():
        raise DomainError("invalid_coach", f"coach: name a scripted coach or an agent of the project, got {coach!r}", path="coach")
    if episode.status == EpisodeStatus.RUNNING:
        raise Conflict("episode_running", f"episode {episode.pk} is still running; coach it once it has ended")
    coached = coach_episode(episode_to_record(episode), _coach_policy(episode, coach.strip()))
    with transaction.atomic():
        rows = {s.index: s for s in Step.objects.select_for_update().filter(episode=episode, role="user")}
        for step in coached["steps"]:
            row = rows.get(step["index"])
            if row is None:
                continue
            meta = dict((row.extra or {}).get("meta") or {})
            note = (step.get("meta") or {}).get(NOTE_KEY)
            if meta.get(NOTE_KEY) == note:
                continue
            if note is None:
                meta.pop(NOTE_KEY, None)
            else:
                meta[NOTE_KEY] = note
            row.extra = {**(row.extra or {}), "meta": meta}
            row.save(update_fields=["extra"])
    return coach_notes(coached)
