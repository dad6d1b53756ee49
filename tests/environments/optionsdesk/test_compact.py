"""Compact results and the short tasks: one-line results with the same numbers, windows picked by the seed, news off."""

from __future__ import annotations

from environments.core import ToolCall
from environments.optionsdesk.compact import compact_result, seed_window
from environments.optionsdesk.env import OptionsDeskEnv
from environments.registry import make


def test_the_frequent_results_become_one_line_with_their_numbers() -> None:
    snapshot = {
        "day": 31,
        "underlyings": [
            {
                "symbol": "IDX",
                "price": 4012.5,
                "ret_1d": 0.003,
                "ret_5d": -0.012,
                "ret_20d": 0.02,
                "realized_vol_20d": 0.1834,
                "implied_vol_1m": 0.2061,
                "earnings_in_days": None,
            },
            {
                "symbol": "ALPH",
                "price": 101.0,
                "ret_1d": 0.0,
                "ret_5d": 0.0,
                "ret_20d": -0.1,
                "realized_vol_20d": 0.3,
                "implied_vol_1m": 0.35,
                "earnings_in_days": 7,
            },
        ],
    }
    assert compact_result("market_snapshot", snapshot) == (
        "d31 IDX 4012.5 r1 +0.3% r5 -1.2% r20 +2.0% rv 18% iv 21% | ALPH 101 r1 +0.0% r5 +0.0% r20 -10.0% rv 30% iv 35% e7"
    )
    assert compact_result("next_day", {"day": 32, "settled": [{}, {}], "equity": 1001234.4}) == "d32 equity 1001234 settled 2"
    assert (
        compact_result("next_day", {"day": 33, "settled": [], "equity": 9.0, "margin_call": True}) == "d33 equity 9 settled 0 MARGIN CALL"
    )
    opened = {"position": "P1", "strategy": "iron_condor", "units": 12, "risk_per_unit": 811.6, "cash": 1004321.2, "legs": []}
    assert compact_result("open_strategy", opened) == "P1 iron_condor x12 risk/unit 812 cash 1004321"
    assert compact_result("close_position", {"closed": {"P1": 1234.0, "P2": -5.4}, "cash": 3.0}) == "closed P1 +1234 P2 -5 cash 3"
    assert compact_result("close_position", {"closed": {}, "cash": 3.0}) == "closed nothing cash 3"
    assert compact_result("open_strategy", {"error": "x"}) == {"error": "x"}  # errors keep their JSON
    assert compact_result("portfolio", {"cash": 1}) == {"cash": 1}  # optional reads keep theirs


def test_windows_tile_the_period_and_the_seed_picks_one() -> None:
    assert [seed_window(s, 120, 10) for s in (0, 1, 11, 12, 13)] == [0, 10, 110, 0, 10]
    assert seed_window(1003, 60, 10) == 10  # 1003 % 6 = 1
    env = make("optionsdesk/oos-short", seed=1003)
    assert isinstance(env, OptionsDeskEnv) and (env.start, env.end) == (215, 225) and env.max_steps == 120
    explicit = make("optionsdesk/oos-short", seed=1003, options={"window_start": 0, "compact": False})
    assert (explicit.start, explicit.end) == (205, 215)  # options given explicitly win over the task's defaults
    assert isinstance(explicit.step(ToolCall("next_day", {})).content, dict)


def test_a_short_task_answers_compactly_and_the_nonews_task_reads_no_news() -> None:
    env = make("optionsdesk/train-short", seed=5)
    assert (env.start, env.end) == (75, 85)  # train period from day 25, 5 % 12 = 5 -> window 50
    assert env.step(ToolCall("next_day", {})).content == "d76 equity 1000000 settled 0"
    assert env.step(ToolCall("read_news", {"days": 20})).content["headlines"]  # news on in train-short
    quiet = make("optionsdesk/train-short-nonews", seed=5)
    assert quiet.step(ToolCall("read_news", {"days": 20})).content == {"headlines": [], "note": "news is switched off in this episode"}
