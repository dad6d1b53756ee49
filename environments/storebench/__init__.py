"""StoreBench: an online apparel store run through 29 merchant tools (see README.md in this folder).

Importing the package registers every scenario file as a task "storebench/<scenario>" and the anchor
policies under the env name "storebench".
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.policies import register_policy
from environments.registry import register
from environments.storebench.anchors import DoNothing, NaiveRestock, RandomValid
from environments.storebench.anchors_smart import Oracle, SmartTriage
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scenario import load_scenarios
from environments.storebench.scoring import load_calibration

DEFAULT_THRESHOLD = 0.3


def _register_all() -> None:
    calibration = load_calibration()
    for scenario in load_scenarios():
        entry = calibration.get(scenario["key"], {})
        calibrated = entry.get("scenario_version") == scenario["version"]
        task = TaskSpec(
            env="storebench",
            key=scenario["key"],
            split=scenario["split"],
            description=f"{scenario['title']}: {scenario['challenge']}",
            horizon=f"{scenario['days']} days",
            pass_threshold=float(entry["pass_threshold"]) if calibrated else DEFAULT_THRESHOLD,
            version=scenario["version"],
            spec=scenario,
            public_seeds=tuple(scenario["public_seeds"]),
        )
        register(task, StoreBenchEnv)


_register_all()
# Registered here, not in anchors.py: anchors_smart subclasses anchors' ScriptedPolicy, so anchors.py importing
# it back would be a cycle.
for _cls in (DoNothing, RandomValid, NaiveRestock, SmartTriage, Oracle):
    register_policy("storebench", _cls.name, _cls)

__all__ = ["StoreBenchEnv"]
