"""The anchors: what the rule picks, the learned selector's data, and the oracle on top."""

from __future__ import annotations

import pytest

from environments.optionsdesk.anchors import RegimeRule, hindsight_pnl
from environments.optionsdesk.learned import CHOICES, EVAL_SEEDS_FROM, selector, training_set
from environments.optionsdesk.market import market_for
from environments.optionsdesk.resolver import Request
from environments.policies import make_policy
from environments.runner import run_episode
from tests.environments.optionsdesk.conftest import do, new_desk


def _snapshot(realized: float, implied: float, trend: float) -> dict[str, object]:
    row = {"symbol": "IDX", "realized_vol_20d": realized, "implied_vol_1m": implied, "ret_20d": trend, "ret_5d": 0.0}
    return {"underlyings": [row]}


@pytest.mark.parametrize(
    ("realized", "implied", "trend", "strategy"),
    [
        (0.30, 0.25, 0.0, "long_straddle"),
        (0.30, 0.40, 0.0, None),
        (0.18, 0.2, 0.05, "bull_call_spread"),
        (0.18, 0.2, -0.05, "bear_put_spread"),
        (0.12, 0.14, 0.01, "iron_condor"),
        (0.20, 0.18, 0.0, None),
    ],
)
def test_the_regime_rule_maps_vol_and_trend_to_a_strategy(realized: float, implied: float, trend: float, strategy: str | None) -> None:
    choice = RegimeRule(new_desk(), 0).choose(_snapshot(realized, implied, trend))
    assert (choice.strategy if choice else None) == strategy


def test_hindsight_pnl_is_what_the_desk_makes_opening_and_closing_the_same_trade() -> None:
    market = market_for(1000)
    assert hindsight_pnl(market, 210, None) == 0.0
    env = new_desk("oos", 1000)  # the period opens on day 205
    do(env, "open_strategy", underlying="IDX", strategy="iron_condor", expiry="month", moneyness="mid", risk_budget=0.02)
    for _ in range(5):
        do(env, "next_day")
    do(env, "close_position", position="all")
    made = hindsight_pnl(market, 205, Request("IDX", "iron_condor", "month", "mid", 0.02))
    assert made == pytest.approx(env.desk.cash - 1_000_000.0, abs=1e-6) and made != 0.0


@pytest.mark.slow  # labelling the training seeds replays about 500 trades
def test_the_learned_selector_trains_on_training_seeds_only_and_predicts_a_menu_choice() -> None:
    with pytest.raises(AssertionError, match="overlap the evaluation seeds"):
        training_set((1, EVAL_SEEDS_FROM))
    model = selector()
    x, y = training_set()
    assert len(x) == len(y) > 50 and set(y) <= set(range(len(CHOICES)))
    assert set(model.predict(x)) <= set(range(len(CHOICES)))


@pytest.mark.slow
def test_the_hindsight_oracle_beats_every_honest_anchor() -> None:
    scores = {}
    for anchor in ("no-trade", "always-straddle", "regime-rule", "hindsight-oracle"):
        env = new_desk("oos", 1000, window_days=20)
        scores[anchor] = run_episode(env, make_policy(anchor, env, 1000))["header"]["score"]
    assert scores["no-trade"]["composite"] == 0.5
    assert scores["hindsight-oracle"]["components"]["total_return"] > 0.0
    assert all(scores["hindsight-oracle"]["composite"] > s["composite"] for a, s in scores.items() if a != "hindsight-oracle")
