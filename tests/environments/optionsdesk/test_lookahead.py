"""No look-ahead: nothing an agent can query on day t depends on the market after t.

The market's random draws after day t are replaced (market_for(seed, future_seed=..., after=t)); an agent that
reads everything and trades on every day up to t must see exactly the same results in both worlds."""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.optionsdesk.market import market_for
from tests.environments.optionsdesk.conftest import do, new_desk

SEED, T = 1000, 215  # the out-of-sample period starts on day 205


def test_perturbing_the_future_leaves_every_past_day_of_the_market_unchanged() -> None:
    real, other = market_for(SEED), market_for(SEED, future_seed=4242, after=T)
    assert np.array_equal(real.close[: T + 1], other.close[: T + 1]) and np.array_equal(real.vol[: T + 1], other.vol[: T + 1])
    assert [h for h in real.news if h.day <= T] == [h for h in other.news if h.day <= T]
    assert not np.allclose(real.close[T + 1 :], other.close[T + 1 :])  # the perturbation does bite


def _reads(env: Any) -> list[Any]:
    out = [
        do(env, "market_snapshot").content,
        do(env, "portfolio").content,
        do(env, "read_news", days=20).content,
        do(env, "pnl_history").content,
    ]
    for symbol in ("IDX", "ALPH", "DELT"):
        out.append(do(env, "option_chain", underlying=symbol, expiry="all", moneyness_min=0.7, moneyness_max=1.3, limit=120).content)
    return out


def _episode_until_t(perturbed: bool) -> list[Any]:
    env = new_desk("oos", SEED, expert=True)
    if perturbed:
        env.market = market_for(SEED, future_seed=4242, after=T)
    seen: list[Any] = []
    strategies = ("long_straddle", "iron_condor", "calendar", "covered_call", "bear_put_spread")
    while env.desk.day < T:
        seen += _reads(env)
        strategy = strategies[env.desk.day % len(strategies)]
        seen.append(do(env, "open_strategy", underlying="ALPH", strategy=strategy, expiry="quarter", risk_budget=0.01).content)
        seen.append(do(env, "place_order", instrument="IDX", side="buy", quantity=10).content)
        if env.desk.day % 3 == 0:
            seen.append(do(env, "close_position", position="all").content)
        seen.append(do(env, "next_day").content)
    seen += _reads(env)
    seen.append(env.status())
    return seen


def test_an_agent_reading_and_trading_every_day_sees_the_same_world_up_to_t() -> None:
    real, perturbed = _episode_until_t(False), _episode_until_t(True)
    assert len(real) == len(perturbed) > 100
    assert sum(isinstance(r, dict) and "position" in r for r in real) >= 15  # trades really filled, not only errors
    for n, (a, b) in enumerate(zip(real, perturbed, strict=True)):
        assert a == b, f"result {n} differs although only the future changed"
    # and the next close is different, so the comparison above was not vacuous
    env_a, env_b = new_desk("oos", SEED), new_desk("oos", SEED)
    env_b.market = market_for(SEED, future_seed=4242, after=T)
    for env in (env_a, env_b):
        while env.desk.day <= T:
            do(env, "next_day")
    assert do(env_a, "market_snapshot").content != do(env_b, "market_snapshot").content
