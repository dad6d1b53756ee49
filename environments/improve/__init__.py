"""improve: tune a seeded model's configuration when every verification costs budget (see README.md).

    env = make("improve/quadratic", seed=3)    # propose changes freely, verify a few, adopt the best, finish

The first verification-costly environment: an idea critic (ideas.py) screens proposals before they are paid for.
"""

from __future__ import annotations

import json
from pathlib import Path

from environments.core import TaskSpec
from environments.improve import anchors, rounds_anchors
from environments.improve.env import COMPONENTS, ImproveEnv
from environments.improve.rounds import COMPONENTS as ROUNDS_COMPONENTS
from environments.improve.rounds import RoundsEnv
from environments.meta import EnvMeta, Panel, Series
from environments.registry import register, register_env

CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
ROUNDS_CALIBRATION_PATH = Path(__file__).with_name("rounds_calibration.json")
_DATA = {"n_val": 40, "n_test": 200, "max_calls": 60}
_SPECS: tuple[tuple[str, str, str, dict[str, object]], ...] = (
    (
        "linear",
        "train",
        "Three informative features of eight, linear target.",
        {"n_features": 8, "n_informative": 3, "quadratic": False, "noise": 0.5, "n_train": 60, "budget": 6, "verify_cost": 1},
    ),
    (
        "quadratic",
        "train",
        "Three informative features of eight, one of them enters squared.",
        {"n_features": 8, "n_informative": 3, "quadratic": True, "noise": 0.5, "n_train": 60, "budget": 6, "verify_cost": 1},
    ),
    (
        "sparse",
        "dev",
        "Two informative features of ten, one squared, few training rows.",
        {"n_features": 10, "n_informative": 2, "quadratic": True, "noise": 0.8, "n_train": 40, "budget": 5, "verify_cost": 1},
    ),
    (
        "costly",
        "test",
        "Four informative features of eight, one squared, noisy; each verification costs 2 of 8.",
        {"n_features": 8, "n_informative": 4, "quadratic": True, "noise": 1.0, "n_train": 40, "budget": 8, "verify_cost": 2},
    ),
)


def _thresholds(path: Path = CALIBRATION_PATH) -> dict[str, float]:
    """Pass thresholds written by calibration.py (or rounds_calibration.py); 0.5 for a task never calibrated."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {key: float(entry["pass_threshold"]) for key, entry in data.get("tasks", {}).items()}


_THRESHOLDS = _thresholds()
TASKS: tuple[TaskSpec, ...] = tuple(
    TaskSpec(
        env="improve",
        key=key,
        split=split,
        description=description,
        horizon="a verification budget",
        pass_threshold=_THRESHOLDS.get(key, 0.5),
        spec={**_DATA, **spec},
    )
    for key, split, description, spec in _SPECS
)

for _task in TASKS:
    register(_task, ImproveEnv)
register_env(
    EnvMeta(
        env="improve",
        calibration="environments.improve.calibration",
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
        score_components=COMPONENTS,
    )
)

# improve-rounds (AREX-2): many rounds of refinement against a verifier; the same package, its own environment name.
_SPARSE = {"n_features": 10, "n_informative": 2, "quadratic": True, "noise": 0.8, "n_train": 40, "n_val": 40, "n_test": 200}
_QUADRATIC = {"n_features": 8, "n_informative": 3, "quadratic": True, "noise": 0.5, "n_train": 60, "n_val": 40, "n_test": 200}
_ROUNDS: tuple[tuple[str, str, str, dict[str, object]], ...] = (
    ("digits", "train", "Sum of decimal digits, in calc; 8 evaluations.", {"problem": "digits", "budget": 8}),
    ("gcd", "train", "Greatest common divisor, in calc; 8 evaluations.", {"problem": "gcd", "budget": 8}),
    (
        "tune",
        "train",
        "Tune the seeded model (three informative features of eight, one squared); 12 evaluations.",
        {"problem": "tune", "budget": 12, **_QUADRATIC},
    ),
    ("isqrt", "dev", "Integer square root within an operation limit, in calc; 8 evaluations.", {"problem": "isqrt", "budget": 8}),
    (
        "tune-sparse",
        "test",
        "Tune the seeded model (two informative features of ten, few rows); 10 evaluations.",
        {"problem": "tune", "budget": 10, **_SPARSE},
    ),
)
_ROUND_THRESHOLDS = _thresholds(ROUNDS_CALIBRATION_PATH)
ROUND_TASKS: tuple[TaskSpec, ...] = tuple(
    TaskSpec(
        env="improve-rounds",
        key=key,
        split=split,
        description=description,
        horizon="a budget of evaluations",
        pass_threshold=_ROUND_THRESHOLDS.get(key, 0.5),
        spec={"max_calls": 40, **spec},
    )
    for key, split, description, spec in _ROUNDS
)
for _task in ROUND_TASKS:
    register(_task, RoundsEnv)
# Playable: an expert writes calc programs (or config changes) in the submit form and watches the rounds climb.
_ROUND_PANELS = (
    Panel("Rounds", "inspect", renderer="json", key="r"),
    Panel("Scores", "inspect", renderer="chart", key="c", series=(Series("score", "submit", y="score", x="round"),)),
)
register_env(
    EnvMeta(
        env="improve-rounds",
        playable=True,
        panels=_ROUND_PANELS,
        shortcuts={"s": "submit", "f": "finish"},
        anchors=dict(rounds_anchors.ANCHORS),
        default_anchor="improver",
        score_components=ROUNDS_COMPONENTS,
        calibration="environments.improve.rounds_calibration",
    )
)
