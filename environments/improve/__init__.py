"""improve: tune a seeded model's configuration when every verification costs budget (see README.md).

    env = make("improve/quadratic", seed=3)    # propose changes freely, verify a few, adopt the best, finish

The first verification-costly environment: an idea critic (ideas.py) screens proposals before they are paid for.
"""

from __future__ import annotations

import json
from pathlib import Path

from environments.core import TaskSpec
from environments.improve import anchors
from environments.improve.env import ImproveEnv
from environments.meta import EnvMeta
from environments.registry import register, register_env

CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
_DATA = {"n_val": 40, "n_test": 200, "max_calls": 60}
_SPECS: tuple[tuple[str, str, str, dict[str, object]], ...] = (
    ("linear", "train", "Three informative features of eight, linear target.",
     {"n_features": 8, "n_informative": 3, "quadratic": False, "noise": 0.5, "n_train": 60, "budget": 6, "verify_cost": 1}),
    ("quadratic", "train", "Three informative features of eight, one of them enters squared.",
     {"n_features": 8, "n_informative": 3, "quadratic": True, "noise": 0.5, "n_train": 60, "budget": 6, "verify_cost": 1}),
    ("sparse", "dev", "Two informative features of ten, one squared, few training rows.",
     {"n_features": 10, "n_informative": 2, "quadratic": True, "noise": 0.8, "n_train": 40, "budget": 5, "verify_cost": 1}),
    ("costly", "test", "Four informative features of eight, one squared, noisy; each verification costs 2 of 8.",
     {"n_features": 8, "n_informative": 4, "quadratic": True, "noise": 1.0, "n_train": 40, "budget": 8, "verify_cost": 2}),
)  # fmt: skip


def _thresholds() -> dict[str, float]:
    """Pass thresholds written by calibration.py; 0.5 for a task never calibrated."""
    if not CALIBRATION_PATH.exists():
        return {}
    data = json.loads(CALIBRATION_PATH.read_text())
    return {key: float(entry["pass_threshold"]) for key, entry in data.get("tasks", {}).items()}


_THRESHOLDS = _thresholds()
TASKS: tuple[TaskSpec, ...] = tuple(
    TaskSpec(env="improve", key=key, split=split, description=description, horizon="a verification budget",
             pass_threshold=_THRESHOLDS.get(key, 0.5), spec={**_DATA, **spec})
    for key, split, description, spec in _SPECS
)  # fmt: skip

for _task in TASKS:
    register(_task, ImproveEnv)
register_env(
    EnvMeta(
        env="improve",
        anchors={
            "do-nothing": lambda env, seed: anchors.DoNothing(),
            "random-valid": anchors.RandomValid,
            "greedy": anchors.Greedy,
            "oracle": anchors.Oracle,
            "critic-guided": anchors.critic_guided,
            "random-select": anchors.random_select_anchor,
        },
        default_anchor="greedy",
        demo_task="quadratic",
    )
)
