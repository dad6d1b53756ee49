"""Options desk: trade options on a seeded market through strategy-level actions (see README.md in this folder).

    env = make("optionsdesk/train", seed=3)        # the train period of history 3
    env = make("optionsdesk/oos", seed=1003)       # its out-of-sample period, on an evaluation seed

A seed is one market history; its three tasks are that history's train, validation and out-of-sample
periods. Training uses seeds below EVAL_SEEDS_FROM, evaluation those from it on. Importing the package
registers the tasks with their calibrated pass thresholds (calibration.json, written by calibration.py) and
declares the lab's view: playable, a chain table, the positions and a P&L chart, the anchors.
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.meta import Column, EnvMeta, Highlight, Panel, Series, SortKey
from environments.optionsdesk.anchors import AlwaysStraddle, HindsightOracle, NoTrade, RegimeRule
from environments.optionsdesk.calibration import load_thresholds
from environments.optionsdesk.compact import SHORT_TASKS, WINDOW_DAYS
from environments.optionsdesk.env import OptionsDeskEnv
from environments.optionsdesk.learned import EVAL_SEEDS_FROM, LearnedSelector
from environments.optionsdesk.probes import PROBE_FAMILIES
from environments.optionsdesk.scoring import COMPONENTS
from environments.optionsdesk.world import PERIODS
from environments.registry import register, register_env

_SPLITS = {"train": "train", "validation": "dev", "oos": "test"}
_DESCRIPTIONS = {
    "train": "Trade the history's training period (120 days) for the best risk-adjusted return.",
    "validation": "Trade the history's validation period (60 days) for the best risk-adjusted return.",
    "oos": "Trade the history's out-of-sample period (60 days) for the best risk-adjusted return.",
}
DEFAULT_THRESHOLD = 0.55
_thresholds = load_thresholds()
for _key, (_first, _last) in PERIODS.items():
    _seeds = (0, 1, 2) if _key == "train" else (EVAL_SEEDS_FROM, EVAL_SEEDS_FROM + 1, EVAL_SEEDS_FROM + 2)
    register(
        TaskSpec(
            env="optionsdesk",
            key=_key,
            split=_SPLITS[_key],
            description=_DESCRIPTIONS[_key],
            horizon=f"{_last - _first} days",
            pass_threshold=_thresholds.get(_key, DEFAULT_THRESHOLD),
            spec={"period": _key},
            public_seeds=_seeds,
        ),
        OptionsDeskEnv,
    )
_SHORT_DESCRIPTIONS = {
    "train-short": "Trade a 10-day window of the history's training period (compact results).",
    "train-short-nonews": "Trade a 10-day window of the history's training period without news (compact results).",
    "oos-short": "Trade a 10-day window of the history's out-of-sample period (compact results).",
}
_PROBE_DESCRIPTIONS = {
    "insurance": "Decide whether to insure the desk's index position with a protective put at the quoted premium.",
    "deal": "Take a counterparty's certain share, or trade the risky call spread on the desk's own book.",
}
for _key, _spec in SHORT_TASKS.items():
    _period = str(_spec["period"])
    _seeds = (0, 1, 2) if _period == "train" else (EVAL_SEEDS_FROM, EVAL_SEEDS_FROM + 1, EVAL_SEEDS_FROM + 2)
    register(
        TaskSpec(
            env="optionsdesk",
            key=_key,
            split=_SPLITS[_period],
            description=_SHORT_DESCRIPTIONS[_key],
            horizon=f"{WINDOW_DAYS} days",
            pass_threshold=_thresholds.get(_period, DEFAULT_THRESHOLD),
            spec=dict(_spec),
            public_seeds=_seeds,
        ),
        OptionsDeskEnv,
    )
for _family in PROBE_FAMILIES:
    register(
        TaskSpec(
            env="optionsdesk",
            key=f"probe-{_family}",
            split="test",
            description=_PROBE_DESCRIPTIONS[_family],
            horizon="1 call",
            pass_threshold=1.0,
            spec={"period": "oos", "probe": _family},
            public_seeds=(EVAL_SEEDS_FROM, EVAL_SEEDS_FROM + 1),
        ),
        OptionsDeskEnv,
    )

_PANELS = (
    Panel(
        "Index chain (month)",
        "option_chain",
        {"underlying": "IDX", "expiry": "month", "moneyness_min": 0.9, "moneyness_max": 1.1},
        renderer="table",
        key="c",
        columns=(
            Column("contract"),
            Column("type"),
            Column("strike"),
            Column("dte"),
            Column("bid"),
            Column("ask"),
            Column("iv"),
            Column("delta"),
            Column("vega"),
            Column("theta"),
        ),
        sort=(SortKey("type"), SortKey("strike")),
        highlights=(Highlight("delta", above=0.45, css="good"),),
    ),
    Panel(
        "Positions",
        "portfolio",
        renderer="table",
        key="p",
        columns=(Column("position"), Column("strategy"), Column("underlying"), Column("legs"), Column("value"), Column("pnl", "P&L")),
        highlights=(Highlight("pnl", below=0, css="risk"),),
    ),
    # One equity line over days: a point per day ended (next_day), the whole curve each time the panel is opened
    # (pnl_history, whose rows count days as "t").
    Panel(
        "P&L",
        "pnl_history",
        renderer="chart",
        key="l",
        series=(Series("equity", "next_day", y="equity"), Series("equity", "pnl_history", y="equity", x="t", rows=True)),
    ),
    Panel("Market", "market_snapshot", renderer="table", key="m"),
    Panel("News", "read_news", {"days": 5}, renderer="table", key="n"),
)
register_env(
    EnvMeta(
        env="optionsdesk",
        calibration="environments.optionsdesk.calibration",
        playable=True,
        panels=_PANELS,
        shortcuts={"o": "open_strategy", "x": "close_position", "d": "next_day"},
        anchors={cls.name: cls for cls in (NoTrade, AlwaysStraddle, RegimeRule, LearnedSelector, HindsightOracle)},
        default_anchor="regime-rule",
        score_components=COMPONENTS,
    )
)

__all__ = ["OptionsDeskEnv"]
