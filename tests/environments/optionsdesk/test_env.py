"""The options desk as an environment: the contract, exact replay, options, settlement, margin and its tasks."""

from __future__ import annotations

import pytest

from environments.contract import check_task
from environments.core import EnvError
from environments.optionsdesk.chain import parse_contract
from environments.optionsdesk.learned import EVAL_SEEDS_FROM, TRAIN_SEEDS
from environments.policies import make_policy
from environments.registry import get_task, list_tasks, make
from environments.replay import replay_record
from environments.runner import run_episode
from tests.environments.optionsdesk.conftest import do, new_desk


@pytest.mark.parametrize("period", ["train", "validation", "oos"])
def test_every_period_keeps_the_contract(period: str) -> None:
    assert check_task(f"optionsdesk/{period}", seed=7, steps=40) == []


def test_the_tasks_are_one_history_split_in_three_with_disjoint_evaluation_seeds() -> None:
    tasks = {t.key: t for t in list_tasks("optionsdesk")}
    assert {k: t.split for k, t in tasks.items()} == {
        "train": "train",
        "validation": "dev",
        "oos": "test",
        "train-short": "train",
        "train-short-nonews": "train",
        "oos-short": "test",
        "probe-insurance": "test",
        "probe-deal": "test",
    }
    assert all(s < EVAL_SEEDS_FROM for k in ("train-short", "train-short-nonews") for s in tasks[k].public_seeds)
    assert all(s >= EVAL_SEEDS_FROM for k in ("oos-short", "probe-insurance", "probe-deal") for s in tasks[k].public_seeds)
    assert all(s < EVAL_SEEDS_FROM for s in tasks["train"].public_seeds + TRAIN_SEEDS)
    assert all(s >= EVAL_SEEDS_FROM for k in ("validation", "oos") for s in tasks[k].public_seeds)
    starts = [(new_desk(k).start, new_desk(k).end) for k in ("train", "validation", "oos")]
    assert starts == [(25, 145), (145, 205), (205, 265)]  # consecutive, never overlapping


def test_an_anchor_episode_replays_exactly_and_a_tampered_one_does_not() -> None:
    env = new_desk("validation", 1001, window_days=20)
    record = run_episode(env, make_policy("regime-rule", env, 1001))
    assert record["header"]["termination_reason"] == "horizon_reached"
    assert replay_record(record)["ok"] is True
    opened = next(s for s in record["steps"] if any(c["name"] == "open_strategy" for c in s.get("tool_calls", [])))
    opened["tool_calls"][0]["arguments"]["risk_budget"] = 0.05
    assert replay_record(record)["ok"] is False


def test_an_expiring_option_settles_at_its_intrinsic_value_on_the_expiry_close() -> None:
    env = new_desk("oos", 1000)
    opened = do(env, "open_strategy", underlying="IDX", strategy="long_straddle", expiry="week", risk_budget=0.01).content
    contracts = [parse_contract(leg["instrument"]) for leg in opened["legs"]]
    expiry = contracts[0].expiry if contracts[0] else 0
    while env.desk.day < expiry - 1:
        assert do(env, "next_day").content["settled"] == []
    cash = env.desk.cash
    settled = do(env, "next_day").content["settled"]
    spot = float(env.market.close[expiry, 0])
    strike = contracts[0].strike if contracts[0] else 0.0
    assert sorted(s["settled_at"] for s in settled) == sorted([round(max(spot - strike, 0.0), 4), round(max(strike - spot, 0.0), 4)])
    quantity = settled[0]["quantity"]
    assert env.desk.cash - cash == pytest.approx(abs(spot - strike) * quantity * 100, abs=1e-6)  # one leg pays, the other expires worthless
    assert env.desk.groups == {}


def test_margin_refuses_a_trade_the_equity_cannot_cover_and_books_nothing() -> None:
    env = new_desk("oos", 1000)
    refused = None
    for _ in range(12):
        result = do(env, "open_strategy", underlying="IDX", strategy="short_strangle", risk_budget=0.2)
        if result.is_error:
            refused = result
            break
    assert refused is not None and refused.content["error"].startswith("margin: the book would need $")
    before = env.state_hash()
    assert do(env, "open_strategy", underlying="IDX", strategy="short_strangle", risk_budget=0.2).is_error
    assert env.state_hash() == before


def test_news_can_be_switched_off_for_the_ablation() -> None:
    on, off = new_desk("oos", 1000), new_desk("oos", 1000, news=False)
    shown = do(on, "read_news", days=20).content["headlines"]
    expected = [h for h in on.market.news if 185 < h.day <= 205]
    assert len(shown) == len(expected) > 0 and {h["symbol"] for h in shown} <= {"ALPH", "BRCK", "CYPR", "DELT"}
    assert "kind" not in shown[0]  # whether a headline is informative is never shown
    assert do(off, "read_news", days=20).content["headlines"] == []


def test_raw_orders_need_the_expert_option_and_a_listed_contract() -> None:
    plain, expert = new_desk("oos", 1000), new_desk("oos", 1000, expert=True)
    assert do(plain, "place_order", instrument="IDX", side="buy", quantity=1).is_error
    chain = do(expert, "option_chain", underlying="IDX").content["contracts"]
    row = chain[0]
    bought = do(expert, "place_order", instrument=row["contract"], side="buy", quantity=3)
    assert not bought.is_error and bought.content["legs"][0]["price"] == row["ask"]
    assert expert.desk.cash == pytest.approx(1_000_000 - 3 * 100 * row["ask"] - 3 * 0.65)
    unlisted = do(expert, "place_order", instrument="IDX-E999-C1", side="buy", quantity=1)
    assert unlisted.is_error and "not listed today" in unlisted.content["error"]


def test_a_window_makes_a_short_episode_and_a_bad_window_is_refused() -> None:
    env = new_desk("oos", 1000, window_start=10, window_days=5)
    assert (env.start, env.end) == (215, 220)
    for _ in range(5):
        result = do(env, "next_day")
    assert result.done and result.termination_reason == "horizon_reached" and result.reward == 0.5  # nothing traded
    with pytest.raises(EnvError, match="window_start"):
        make("optionsdesk/oos", 1000, options={"window_start": 58})


def test_the_score_is_zero_until_the_end_and_a_preview_books_nothing() -> None:
    env = new_desk("oos", 1000)
    preview = do(env, "open_strategy", underlying="BRCK", strategy="iron_condor", preview=True).content
    assert preview["preview"] is True and preview["units"] >= 1 and env.desk.groups == {}
    assert env.score().composite == 0.0 and get_task("optionsdesk/oos").pass_threshold > 0.5
