"""Phantom worlds: rule-generated fictional universes with multi-hop search questions (see README.md)."""

from __future__ import annotations

from functools import partial

from environments.phantom.anchors import ANCHOR_NAMES, phantom_anchor
from environments.phantom.env import PhantomEnv
from environments.phantom.tasks import phantom_tasks
from environments.policies import register_policy
from environments.registry import register

for _task in phantom_tasks():
    register(_task, PhantomEnv)
for _name in ANCHOR_NAMES:
    register_policy("phantom", _name, partial(phantom_anchor, _name))  # type: ignore[arg-type]

__all__ = ["PhantomEnv"]
