"""Reads for the play pages."""

from __future__ import annotations

from environments import registry
from environments.core import TaskSpec


def playable_tasks() -> list[TaskSpec]:
    """The tasks of every environment whose metadata says a human may play it."""
    return [task for meta in registry.list_envs() if meta.playable for task in registry.list_tasks(meta.env)]
