"""Scenario files: versioned JSON data under scenarios/, validated when loaded.

A scenario names its split, length, starting world and the shocks that will hit it. Shock days may be a
[first, last] range: the `shocks` RNG stream picks the day per seed, so seeds differ in timing, not in kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.core import EnvError, validate_arguments

SCENARIO_DIR = Path(__file__).with_name("scenarios")
SCHEMA_ID = "storebench.scenario/1"
SHOCK_KINDS = (
    "supplier_collapse",
    "viral_trend",
    "heat_wave",
    "cold_snap",
    "shipping_strike",
    "price_war",
    "payment_outage",
    "cost_inflation",
    "quality_defect",
    "holiday_peak",
    "demand_slump",
    "supplier_delays",
)


def _num(lo: float, hi: float, kind: str = "number") -> dict[str, Any]:
    return {"type": kind, "minimum": lo, "maximum": hi}


_SHOCK = {
    "type": "object",
    "required": ["kind", "day", "duration", "magnitude", "target", "warning_days", "headline"],
    "additionalProperties": False,
    "properties": {
        "kind": {"type": "string", "enum": list(SHOCK_KINDS)},
        "day": {},  # an integer or a [first, last] pair, checked below
        "duration": _num(1, 400, "integer"),
        "magnitude": _num(0, 10),
        "target": {"type": "string", "maxLength": 40},
        "warning_days": _num(0, 30, "integer"),
        "headline": {"type": "string", "minLength": 5, "maxLength": 300},
    },
}

SCENARIO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "schema",
        "key",
        "version",
        "split",
        "title",
        "description",
        "challenge",
        "days",
        "start_day_of_year",
        "public_seeds",
        "world",
        "shocks",
    ],
    "additionalProperties": False,
    "properties": {
        "schema": {"type": "string", "enum": [SCHEMA_ID]},
        "key": {"type": "string", "pattern": r"[a-z][a-z0-9-]{2,40}"},
        "version": {"type": "string", "pattern": r"\d+\.\d+"},
        "split": {"type": "string", "enum": ["train", "dev", "test"]},
        "title": {"type": "string", "maxLength": 80},
        "description": {"type": "string", "maxLength": 1000},
        "challenge": {"type": "string", "maxLength": 300},
        "days": _num(5, 400, "integer"),
        "start_day_of_year": _num(0, 364, "integer"),
        "public_seeds": {"type": "array", "items": _num(0, 2**31, "integer"), "minItems": 3, "maxItems": 3},
        "world": {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "products",
                "suppliers",
                "starting_cash",
                "starting_cover_days",
                "stock_bias",
                "fixed_cost_per_day",
                "demand_scale",
                "ops_per_window",
                "window_minutes",
                "credit_line",
                "bankrupt_after_days",
                "payment_terms_days",
                "return_rate",
                "question_rate",
            ],
            "properties": {
                "products": _num(4, 15, "integer"),
                "suppliers": _num(2, 6, "integer"),
                "starting_cash": _num(0, 1e7),
                "starting_cover_days": _num(0, 120),
                "stock_bias": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {k: _num(0, 10) for k in ("summer", "winter", "all")},
                },
                "fixed_cost_per_day": _num(0, 1e5),
                "demand_scale": _num(0.1, 10),
                "ops_per_window": _num(5, 500, "integer"),
                "window_minutes": _num(60, 1440, "integer"),
                "credit_line": _num(0, 1e7),
                "bankrupt_after_days": _num(1, 60, "integer"),
                "payment_terms_days": _num(0, 60, "integer"),
                "return_rate": _num(0, 0.5),
                "question_rate": _num(0, 1),
            },
        },
        "shocks": {"type": "array", "items": _SHOCK, "maxItems": 20},
    },
}


def validate_scenario(data: Any, source: str = "scenario") -> dict[str, Any]:
    """Returns the scenario when valid; raises EnvError naming the file, field and value otherwise."""
    problem = validate_arguments(SCENARIO_SCHEMA, data)
    if problem:
        raise EnvError("bad_scenario", f"{source}: {problem.replace('arguments', 'scenario', 1)}")
    for i, shock in enumerate(data["shocks"]):
        day = shock["day"]
        ok_int = isinstance(day, int) and not isinstance(day, bool) and 0 <= day < data["days"]
        ok_range = (
            isinstance(day, list)
            and len(day) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in day)
            and 0 <= day[0] <= day[1] < data["days"]
        )
        if not (ok_int or ok_range):
            raise EnvError(
                "bad_scenario", f"{source}: shocks[{i}].day must be a day in [0, {data['days']}) or a [first, last] range, got {day!r}"
            )
        if shock["kind"] in ("supplier_delays",) and not shock["target"].startswith("SUP-"):
            raise EnvError("bad_scenario", f"{source}: shocks[{i}].target must name a supplier (SUP-n), got {shock['target']!r}")
    return dict(data)


def load_scenarios(directory: Path = SCENARIO_DIR) -> list[dict[str, Any]]:
    scenarios = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise EnvError("bad_scenario", f"{path.name}: not valid JSON ({exc})") from exc
        scenario = validate_scenario(data, path.name)
        if scenario["key"] != path.stem:
            raise EnvError("bad_scenario", f"{path.name}: key {scenario['key']!r} must match the file name")
        scenarios.append(scenario)
    return scenarios
