"""StoreBench's short family, "storebench-short": every scenario cut to a horizon of two or three days.

    make("storebench-short/cold-snap-3d", seed=4)                     # engine 2.0.0 (the clock)
    make("storebench-short/cold-snap-3d", seed=4, version="1.0.0")    # the frozen, batch-settled engine
    task_set("storebench-short/train")                                # the training scenarios' short tasks (10)

Why: a StoreBench scenario runs 30-365 days and an anchor that passes makes 100-500 calls, too long for anything
that plays many episodes on CPU (AdvSim2Real's co-evolution: training/advsim). A short task is 10-40 anchor calls.

How a scenario is cut (`short_scenario`): the same world settings (catalogue size, suppliers, cash, costs, rates),
`days` = the horizon, and every shock strikes on day 1, warned at most one day ahead (a warned shock's headline
arrives on day 0), with its kind, duration, magnitude and target kept. full-year is left out: a year's seven shocks
on one day would be another scenario. The key is `<scenario>-<days>d`; its world draws from that key's streams, so
a scenario's two horizons are two stores. The split is the scenario's, so the family's train/dev/test sets hold out
the same scenarios StoreBench's do. The horizon is the knob AdvSim2Real's curriculum turns.

Its own environment name (as improve-rounds beside improve), so StoreBench's task sets, calibration and tables stay
what they are. The engine is StoreBenchEnv's, both versions, with the attack axis; thresholds come from
short_calibration.json (per engine; `python -m environments calibrate storebench-short`, short_calibration.py).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from environments.meta import EnvMeta
from environments.registry import register, register_env
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scenario import load_scenarios
from environments.storebench.scoring import CALIBRATION_PATH, load_calibration, scenario_task

ENV = "storebench-short"
HORIZONS = (2, 3)  # days
LEFT_OUT = ("full-year",)
SHORT_CALIBRATION_PATH = CALIBRATION_PATH.with_name("short_calibration.json")


class ShortStoreBenchEnv(StoreBenchEnv):
    name = ENV
    calibration_path: ClassVar[Path] = SHORT_CALIBRATION_PATH


def short_key(source: str, days: int) -> str:
    return f"{source}-{days}d"


def short_scenario(scenario: dict[str, Any], days: int) -> dict[str, Any]:
    """The scenario cut to `days` days, its shocks on day 1 (module docstring); `source` names the scenario."""
    assert days in HORIZONS, f"days={days}: the short family's horizons are {HORIZONS}"
    out = copy.deepcopy(scenario)
    out.update(key=short_key(scenario["key"], days), days=days, title=f"{scenario['title']} ({days} days)", source=scenario["key"])
    out["shocks"] = [{**shock, "day": 1, "warning_days": min(1, shock["warning_days"])} for shock in scenario["shocks"]]
    return out


def short_scenarios() -> list[dict[str, Any]]:
    return [short_scenario(s, days) for s in load_scenarios() if s["key"] not in LEFT_OUT for days in HORIZONS]


def register_short(storebench: EnvMeta, *, default_threshold: float) -> None:
    """Registers every short task (thresholds from this engine's section of short_calibration.json) and the family's
    metadata: StoreBench's panels, anchors and attack axis under its own name, not the first-run demo."""
    calibration = load_calibration(ShortStoreBenchEnv.version, SHORT_CALIBRATION_PATH)
    for scenario in short_scenarios():
        register(scenario_task(ENV, scenario, calibration, default_threshold=default_threshold), ShortStoreBenchEnv)
    # payment-outage-2d: the first-run demo's scenario, cut to two days, for the local model's live episode
    register_env(
        dataclasses.replace(
            storebench,
            env=ENV,
            demo_task="",
            demo_priority=0,
            analyzer="",
            calibration="environments.storebench.short_calibration",
            model_demo_task="payment-outage-2d",
        )
    )
