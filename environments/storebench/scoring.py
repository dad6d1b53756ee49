"""The composite score, computed from the world's own ledger and state at the end of the episode.

    profit      = net worth at the end - net worth at the start (stock at liquidation value, minus payables
                  and prepaid orders not shipped). It is normalised per world as (profit + idle loss) / potential,
                  where the idle loss is what fixed costs and default marketing burn over the horizon and the
                  potential is the expected gross margin at reference prices (both from hidden parameters),
                  then scaled between the scenario's do-nothing mean (0) and oracle mean (1) from calibration.json
    service     = units shipped on time / units customers wanted (stock-outs count as misses; payment outages do not)
    satisfaction= mean settled order satisfaction, minus ticket penalties
    inventory   = fill rate x min(1, stock turns / target turns)
    cash_safety = share of nights with cash >= 0 and no overdue supplier invoice

    composite = profit x (0.4 + 0.6 x quality), quality = 0.35 service + 0.25 satisfaction + 0.2 inventory + 0.2 cash_safety

Profit gates the rest: a store that loses more than doing nothing scores 0 however friendly it was, which is
what makes selling below cost, refund sprees and marketing spam worthless. Bankrupt or unfinished runs score 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.core import Score, TaskSpec
from environments.meta import ScoreComponent
from environments.storebench.world import World

CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
WEIGHTS = {"service": 0.35, "satisfaction": 0.25, "inventory": 0.2, "cash_safety": 0.2}
_QUALITY = "quality (composite = profit × (0.4 + 0.6 × quality))"
# What the viewer says of each component (the module docstring, in a reader's words).
COMPONENTS = {
    "profit": ScoreComponent(
        "net worth gained, scaled from the scenario's do-nothing mean (0) to its oracle mean (1); it multiplies the rest: "
        "composite = profit × (0.4 + 0.6 × quality)",
        moved_by=("set_price", "create_purchase_order", "create_discount", "set_marketing_budget"),
    ),
    "service": ScoreComponent("units shipped on time / units customers wanted", WEIGHTS["service"], _QUALITY, ("fulfil_orders",)),
    "satisfaction": ScoreComponent(
        "mean satisfaction of settled orders, minus ticket penalties", WEIGHTS["satisfaction"], _QUALITY, ("reply_ticket",)
    ),
    "inventory": ScoreComponent(
        "fill rate × min(1, stock turns / target turns of about three weeks' cover)",
        WEIGHTS["inventory"],
        _QUALITY,
        ("create_purchase_order",),
    ),
    "cash_safety": ScoreComponent("share of nights with cash ≥ 0 and no overdue supplier invoice", WEIGHTS["cash_safety"], _QUALITY),
}


def load_calibration(env_version: str, path: Path = CALIBRATION_PATH) -> dict[str, Any]:
    """{scenario key: entry} calibrated on engine `env_version`; {} when that engine was never calibrated.

    Entries are kept per engine version (and carry their scenario version), so a new engine never scores
    against an older engine's references, and an older engine's episodes still replay to their recorded score.
    """
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text())
    return data.get("engines", {}).get(env_version, {}).get("scenarios", {})


def calibrated_entry(calibration: dict[str, Any], key: str, scenario_version: str) -> dict[str, Any] | None:
    """The scenario's entry in one engine's calibration, or None when it was calibrated on another scenario version."""
    entry = calibration.get(key)
    return entry if entry and entry.get("scenario_version") == scenario_version else None


def scenario_task(env: str, scenario: dict[str, Any], calibration: dict[str, Any], *, default_threshold: float) -> TaskSpec:
    """The task a scenario registers as under `env` (storebench, storebench-short): its pass threshold from its entry in
    `calibration` (one engine's), else `default_threshold`."""
    entry = calibrated_entry(calibration, scenario["key"], scenario["version"])
    return TaskSpec(
        env=env,
        key=scenario["key"],
        split=scenario["split"],
        description=f"{scenario['title']}: {scenario['challenge']}",
        horizon=f"{scenario['days']} days",
        pass_threshold=float(entry["pass_threshold"]) if entry else default_threshold,
        version=scenario["version"],
        spec=scenario,
        public_seeds=tuple(scenario["public_seeds"]),
    )


def profit_references(world: World, calibration: dict[str, Any]) -> tuple[float, float]:
    """(floor, reference) of the normalised profit: calibrated anchor means, else a rough default."""
    entry = calibrated_entry(calibration, world.scenario_key, world.scenario_version)
    if entry:
        return float(entry["profit_floor"]), float(entry["profit_reference"])
    return 0.0, 0.6


def normalised_profit(world: World, profit: float) -> float:
    return (profit + world.idle_loss) / world.potential


def raw_metrics(world: World) -> dict[str, float]:
    ledger = world.ledger
    wanted = ledger.units_demanded - ledger.units_lost_outage
    service = ledger.units_on_time / wanted if wanted else 0.0
    sats = [o.satisfaction for o in world.orders.values() if o.satisfaction >= 0]
    n = ledger.satisfaction_n + len(sats)
    mean_sat = (ledger.satisfaction_sum + sum(sats)) / n if n else 0.0
    satisfaction = mean_sat - ledger.ticket_penalties / max(20, n) if n else 0.0
    fill = 1.0 - ledger.units_lost_stockout / wanted if wanted else 0.0
    days = max(1, ledger.days)
    avg_stock = ledger.stock_unit_days / days
    turns = ledger.units_sold / max(1.0, avg_stock)
    target_turns = days / 21.0  # about three weeks of cover on average is healthy for apparel
    inventory = fill * min(1.0, turns / target_turns)
    cash_safety = 1.0 - ledger.days_cash_unsafe / days
    return {
        "profit": round(world.net_worth() - ledger.start_net_worth, 2),
        "service": _clip(service),
        "satisfaction": _clip(satisfaction),
        "inventory": _clip(inventory),
        "cash_safety": _clip(cash_safety),
    }


def score_world(world: World, *, threshold: float, calibration: dict[str, Any]) -> Score:
    """`calibration` is load_calibration(the engine's version)."""
    metrics = raw_metrics(world)
    floor, reference = profit_references(world, calibration)
    normalised = normalised_profit(world, metrics["profit"])
    components = {"profit": round(profit_component(normalised, floor, reference), 4), **{k: round(metrics[k], 4) for k in WEIGHTS}}
    details = {
        "profit_dollars": metrics["profit"],
        "profit_normalised": round(normalised, 6),
        "profit_floor": floor,
        "profit_reference": reference,
        "days_played": world.day,
        "days_total": world.days,
    }
    if world.bankrupt:
        return Score(composite=0.0, passed=False, components=components, termination_reason="bankrupt", details=details)
    if not world.finished:
        return Score(composite=0.0, passed=False, components=components, termination_reason=None, details={**details, "unfinished": True})
    composite = composite_from(components)
    return Score(
        composite=composite, passed=composite >= threshold, components=components, termination_reason="horizon_reached", details=details
    )


def running_value(world: World, *, calibration: dict[str, Any]) -> float:
    """The composite the ledger gives the store as it stands (0 once bankrupt), finished or not; at the horizon
    it equals score_world's composite, which makes per-day differences of it telescope to the final score."""
    if world.bankrupt:
        return 0.0
    metrics = raw_metrics(world)
    floor, reference = profit_references(world, calibration)
    profit = round(profit_component(normalised_profit(world, metrics["profit"]), floor, reference), 4)
    return composite_from({"profit": profit, **{k: round(metrics[k], 4) for k in WEIGHTS}})


def profit_component(profit: float, floor: float, reference: float) -> float:
    return _clip((profit - floor) / max(1e-6, reference - floor))


def composite_from(components: dict[str, float]) -> float:
    """The composite of a finished, solvent run from its (rounded) components; calibration reuses it."""
    quality = sum(WEIGHTS[k] * components[k] for k in WEIGHTS)
    return round(components["profit"] * (0.4 + 0.6 * quality), 4)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))
