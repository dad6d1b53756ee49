"""Phantom worlds: rule-generated fictional universes with multi-hop search questions (see README.md)."""

from __future__ import annotations

from environments.phantom.env import PhantomEnv
from environments.phantom.tasks import phantom_tasks
from environments.registry import register

for _task in phantom_tasks():
    register(_task, PhantomEnv)

__all__ = ["PhantomEnv"]
