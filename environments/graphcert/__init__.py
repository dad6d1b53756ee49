"""GraphCert: a Phantom variant with knowledge-graph tools and certified evidence rubrics (see README.md)."""

from __future__ import annotations

from environments.graphcert.anchors import ANCHOR_NAMES, anchor_factory
from environments.graphcert.env import GraphCertEnv
from environments.graphcert.rubric import COMPONENTS
from environments.graphcert.tasks import graphcert_tasks
from environments.meta import EnvMeta, Panel
from environments.registry import register, register_env

for _task in graphcert_tasks():
    register(_task, GraphCertEnv)
register_env(
    EnvMeta(
        env="graphcert",
        calibration="environments.graphcert.calibration",
        playable=True,
        panels=(Panel("Schema", "relations", renderer="json", key="s"),),
        # The contract check drives every env with its "random-valid" policy; the random anchor only makes valid calls.
        anchors={**{name: anchor_factory(name) for name in ANCHOR_NAMES}, "random-valid": anchor_factory("random")},
        default_anchor="graphwalk",
        score_components=COMPONENTS,
        graded_by="answer",
        # No demo_task: the first-run demo takes the first playable environment by name, and "graphcert" would move
        # it off StoreBench (tests/lab/rollouts/test_demo.py); "bridge-dev" is the short task to name when wanted.
    )
)

__all__ = ["GraphCertEnv"]
