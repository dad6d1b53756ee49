"""StoreBench: an online apparel store run through 29 merchant tools (see README.md in this folder).

Importing the package registers every scenario file as a task "storebench/<scenario>" and declares what the
lab needs (environments.meta): playable, the operator's panels, the anchor policies.
"""

from __future__ import annotations

from environments.attacks import AttackAxis
from environments.core import TaskSpec
from environments.meta import EnvMeta, Panel
from environments.registry import register, register_env
from environments.storebench.anchors import DoNothing, NaiveRestock, RandomValid
from environments.storebench.anchors_smart import Hardened, Oracle, SmartTriage
from environments.storebench.attack_texts import GOALS, GUIDANCE, STYLES
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
# The anchors are declared here, not in anchors.py: anchors_smart subclasses anchors' ScriptedPolicy, so
# anchors.py importing it back would be a cycle.
register_env(
    EnvMeta(
        env="storebench",
        playable=True,
        # What an operator keeps open in tabs; each opening is a tool call, charged like any other.
        panels=(
            Panel("Cash and P&L", "get_finance", renderer="json"),
            Panel("Inventory", "get_inventory", renderer="json"),
            Panel("Open orders", "list_orders", {"status": "open"}, renderer="json"),
            Panel("Purchase orders", "list_purchase_orders", {"status": "open"}, renderer="json"),
            Panel("Open tickets", "list_tickets", {"status": "open"}, renderer="json"),
            Panel("News and alerts", "read_news", renderer="json"),
        ),
        anchors={cls.name: cls for cls in (DoNothing, RandomValid, NaiveRestock, SmartTriage, Hardened, Oracle)},
        default_anchor="smart-triage",
        attacks=AttackAxis(styles=STYLES, goals=GOALS, guidance=GUIDANCE),
    )
)

__all__ = ["StoreBenchEnv"]
