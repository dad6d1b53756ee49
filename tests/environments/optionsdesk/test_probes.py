"""Risk probes inside the desk: stakes priced from the chain, trading closed, riskprobe's choose, CARA anchors, replay."""

from __future__ import annotations

import math

import pytest

from environments.core import ToolCall
from environments.optionsdesk.env import OptionsDeskEnv
from environments.optionsdesk.probes import desk_probe, draw_outcome, probe_day
from environments.registry import make
from environments.replay import replay_record
from environments.riskprobe.anchors import CaraPolicy
from environments.riskprobe.cara import certainty_equivalent
from environments.riskprobe.fit import Decision, fit_cara
from environments.runner import run_episode


def _quote(env: OptionsDeskEnv, contract: str) -> dict[str, float]:
    symbol, _, kind = contract.split("-")
    spot = env.step(ToolCall("option_chain", {"underlying": symbol, "limit": 1})).content["spot"]
    near = float(kind[1:]) / spot
    arguments = {"underlying": symbol, "expiry": "all", "moneyness_min": near - 0.001, "moneyness_max": near + 0.001}
    return next(r for r in env.step(ToolCall("option_chain", arguments)).content["contracts"] if r["contract"] == contract)


def test_the_insurance_probe_prices_its_puts_at_the_chains_ask() -> None:
    env = make("optionsdesk/probe-insurance", seed=1003)
    assert isinstance(env, OptionsDeskEnv) and env.start == probe_day("insurance", 1003) == 206
    probe = desk_probe("insurance", 1003)
    assert probe.resources == 10_000 and probe.names == ("none", "partial", "full")
    ask = _quote(env, "IDX-E230-P425")["ask"]  # the at-the-money put the text quotes, read through the desk's own tool
    assert ask == 10.65 and "strike 425 at 10.65 (full)" in probe.text and "long 1,200 IDX shares at 425.28" in probe.text
    # full: 12 contracts at 10.65 a share + $0.65 each = $12,787.80 -> 128 credits; the 10% crash to 301.84 leaves
    # 425.28 - 425 a share unhedged: 12,787.80 + 1,200 x 0.28 = $13,123.80 -> 131 credits
    assert probe.lottery("full") == ((0.1, -131.0), (0.9, -128.0))
    assert probe.lottery("none") == ((0.1, -1481.0), (0.9, 0.0))  # 1,200 x (425.28 - 301.84) = $148,128
    assert probe.lottery("partial") == ((0.1, -726.0), (0.9, -3.0))


def test_the_deal_probe_sizes_the_spread_with_the_resolver_and_states_its_stakes() -> None:
    env = make("optionsdesk/probe-deal", seed=1003)
    probe = desk_probe("deal", 1003)
    long_call, short_call = _quote(env, "IDX-E251-C405"), _quote(env, "IDX-E251-C430")
    debit = (long_call["ask"] - short_call["bid"]) * 53 * 100 + 2 * 0.65 * 53
    assert round(debit) == 49_889 and "buy 53 IDX 405/430 call spreads" in probe.text
    win = 25 * 53 * 100 - debit  # the width less the debit: $82,611
    assert probe.lottery("gamble") == ((0.3, float(round(win / 100))), (0.7, -float(round(debit / 100))))
    assert probe.lottery("gamble") == ((0.3, 826.0), (0.7, -499.0)) and probe.lottery("deal") == ((1.0, 35.0),)


def test_trading_is_closed_reads_work_and_choose_ends_the_episode_with_a_valid_choice_scored_one() -> None:
    env = make("optionsdesk/probe-deal", seed=1003)
    assert [t.name for t in env.tools()][-1] == "choose"
    closed = env.step(ToolCall("next_day", {}))
    assert closed.is_error and "trading is closed" in closed.content["error"] and env.desk.day == 220
    preview = env.step(ToolCall("open_strategy", {"underlying": "IDX", "strategy": "long_straddle", "preview": True}))
    assert not preview.is_error and preview.content["preview"] is True
    bad = env.step(ToolCall("choose", {"option": "full"}))
    assert bad.is_error and not env.done
    done = env.step(ToolCall("choose", {"option": "deal"}))
    assert done.done and done.reward == 1.0 and done.content == {"option": "deal", "change": 35, "resources": 10_035}
    score = env.score()
    assert score.termination_reason == "agent_stop" and score.components == {"answered": 1.0, "expected_value": 35.0}


def test_cara_anchors_choose_by_certainty_equivalent_and_the_episode_replays() -> None:
    # insurance 1003 by hand: neutral: none -148.1, partial -0.1 x 726 - 0.9 x 3 = -75.3, full -128.3 -> partial;
    # a = 0.01: CE(none) = -100 log(0.1 e^14.81 + 0.9) ~ -1251 -> full; a = -0.005: CE(none) -21.1 > CE(partial) -23.5 -> none
    chosen = {}
    for a in (0.0, 0.01, -0.005):
        env = make("optionsdesk/probe-insurance", seed=1003)
        record = run_episode(env, CaraPolicy(env, 1003, a=a))
        chosen[a] = record["header"]["score"]["details"]["choice"]
        assert replay_record(record)["ok"] is True
    assert chosen == {0.0: "partial", 0.01: "full", -0.005: "none"}
    assert certainty_equivalent(-0.005, ((0.1, -1481.0), (0.9, 0.0))) == pytest.approx(-21.06, abs=0.01)


def test_the_fit_reads_the_desk_probes_choices() -> None:
    decisions = []
    for seed in range(1000, 1024):
        probe = desk_probe(("insurance", "deal")[seed % 2], seed)
        ce = [certainty_equivalent(0.002, lottery) for _, lottery in probe.options]
        decisions.append(Decision(tuple(lottery for _, lottery in probe.options), tuple(float(c == max(ce)) for c in ce)))
    fit = fit_cara(decisions)
    assert fit.consistency == 1.0 and fit.low <= 0.002 <= fit.high


def test_the_outcome_is_drawn_by_cumulative_probability() -> None:
    lottery = ((0.1, -1481.0), (0.9, 0.0))
    assert draw_outcome(lottery, 0.05) == -1481.0 and draw_outcome(lottery, 0.1) == 0.0 and draw_outcome(lottery, 0.999) == 0.0
    assert math.isclose(sum(p for p, _ in lottery), 1.0)
