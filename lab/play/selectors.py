"""Reads for the play pages."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest

from environments import registry
from environments.core import TaskSpec
from lab.errors import NotFound
from lab.pages import visible_projects
from lab.play.models import HumanSession
from lab.trajectories.models import Episode, Step


def playable_tasks() -> list[TaskSpec]:
    """The tasks of every environment whose metadata says a human may play it."""
    return [task for meta in registry.list_envs() if meta.playable for task in registry.list_tasks(meta.env)]


def tasks_grouped(tasks: list[TaskSpec]) -> list[tuple[str, list[TaskSpec]]]:
    """The tasks under one heading per environment and split ("storebench · test"), environments by name and splits
    in train, dev, test order: what a task picker shows instead of one list of every task."""
    order = {"train": 0, "dev": 1, "test": 2}
    groups: dict[tuple[str, str], list[TaskSpec]] = {}
    for task in tasks:
        groups.setdefault((task.env, task.split), []).append(task)
    keys = sorted(groups, key=lambda key: (key[0], order.get(key[1], 3), key[1]))
    return [(f"{env} · {split}", sorted(groups[(env, split)], key=lambda t: t.key)) for env, split in keys]


def slot_tasks() -> list[TaskSpec]:
    """The tasks of every environment with a role slot a person may fill (the user's seat)."""
    return [task for meta in registry.list_envs() if meta.roles for task in registry.list_tasks(meta.env)]


def play_session_visible(request: HttpRequest, pk: int) -> HumanSession:
    """A session in a project the requester can see (any seat); NotFound otherwise, whoever's it is."""
    projects = visible_projects(request)
    session = HumanSession.objects.filter(pk=pk, episode__project__in=projects).select_related("task", "episode", "user", "agent").first()
    if session is None:
        raise NotFound("not_found", f"No play session {pk} that you can see.")
    return session


def human_session_list_for(*, user_id: int) -> QuerySet[HumanSession]:
    """The user's own play sessions, most recently active first (in any project: they are the user's)."""
    return HumanSession.objects.filter(user_id=user_id).select_related("task", "episode", "agent").order_by("-last_active_at")


def conversation(episode: Episode) -> list[dict[str, Any]]:
    """The episode's spoken turns, oldest first, as the chat renderer draws them: the actor's messages (role
    "agent") and each role slot's (its name: "user"); tool calls, observations and empty turns are left out."""
    rows = Step.objects.filter(episode=episode).exclude(source="env").exclude(message=None).order_by("index")
    out = []
    for source, role, message in rows.values_list("source", "role", "message"):
        if role in ("", "actor") and source in ("agent", "human"):
            speaker = "agent"
        elif role and role not in ("critic", "consultant", "harness"):
            speaker = role
        else:
            continue
        if isinstance(message, str) and message:
            out.append({"role": speaker, "content": message})
    return out
