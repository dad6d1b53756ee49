"""Phantom worlds: rule-generated fictional universes with multi-hop search questions (see README.md)."""

from __future__ import annotations

from environments.meta import EnvMeta
from environments.phantom.anchors import ANCHOR_NAMES, anchor_factory
from environments.phantom.env import PhantomEnv
from environments.phantom.scoring import COMPONENTS
from environments.phantom.tasks import phantom_tasks
from environments.registry import register, register_env

for _task in phantom_tasks():
    register(_task, PhantomEnv)
register_env(
    EnvMeta(
        env="phantom",
        calibration="environments.phantom.calibration",
        # The contract check drives every env with its "random-valid" policy; phantom's random anchor only makes valid calls.
        anchors={**{name: anchor_factory(name) for name in ANCHOR_NAMES}, "random-valid": anchor_factory("random")},
        default_anchor="keyword",
        score_components=COMPONENTS,
        graded_by="answer",
    )
)

__all__ = ["PhantomEnv"]
