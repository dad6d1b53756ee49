"""Phantom worlds: rule-generated fictional universes with multi-hop search questions (see README.md)."""

from __future__ import annotations

from environments.phantom.anchors import ANCHOR_NAMES, anchor_factory
from environments.phantom.env import PhantomEnv
from environments.phantom.tasks import phantom_tasks
from environments.policies import register_policy
from environments.registry import register

for _task in phantom_tasks():
    register(_task, PhantomEnv)
for _name in ANCHOR_NAMES:
    register_policy("phantom", _name, anchor_factory(_name))
# The contract check drives every env with its "random-valid" policy; phantom's random anchor only makes valid calls.
register_policy("phantom", "random-valid", anchor_factory("random"))

__all__ = ["PhantomEnv"]
