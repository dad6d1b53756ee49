"""The composite score: from the ledger, in [0, 1], zero for idle, bankrupt and unfinished runs."""

from __future__ import annotations

import pytest

from environments.registry import list_tasks, make
from environments.runner import make_policy, run_episode
from environments.storebench.scoring import WEIGHTS, composite_from, raw_metrics

from .conftest import do, new_store


@pytest.mark.parametrize("task", [t.id for t in list_tasks("storebench")])
def test_doing_nothing_fails_every_scenario(task: str) -> None:
    env = make(task, seed=90210)
    record = run_episode(env, make_policy("do-nothing", env, 90210))
    score = record["header"]["score"]
    assert not score["passed"]
    assert score["composite"] < env.task.pass_threshold
    assert record["header"]["termination_reason"] in ("horizon_reached", "bankrupt")


def test_an_unfinished_run_scores_zero_even_when_ahead(store) -> None:
    for _ in range(5):
        do(store, "fulfil_orders")
        do(store, "end_window")
    score = store.score()
    assert score.composite == 0.0 and not score.passed and score.details["unfinished"]


def test_a_bankrupt_store_scores_zero_with_reason_bankrupt() -> None:
    env = new_store("cash-crunch", seed=1)
    for channel in ("web", "marketplace", "social"):
        do(env, "set_marketing_budget", channel=channel, daily_budget=20000)
    while not env.done:
        result = do(env, "end_window")
    assert result.termination_reason == "bankrupt" and env.world.bankrupt
    score = env.score()
    assert score.composite == 0.0 and score.termination_reason == "bankrupt"


def test_the_composite_follows_its_formula_from_the_components() -> None:
    env = make("storebench/launch-week", seed=31337)
    record = run_episode(env, make_policy("smart-triage", env, 31337))
    score = record["header"]["score"]
    assert set(score["components"]) == {"profit", *WEIGHTS}
    assert all(0.0 <= v <= 1.0 for v in score["components"].values())
    assert score["composite"] == composite_from(score["components"]) > 0.3
    metrics = raw_metrics(env.world)
    assert metrics["profit"] == score["details"]["profit_dollars"]


def test_stock_counts_at_cost_with_a_haircut_never_at_retail(store) -> None:
    world = store.world
    before = world.net_worth()
    for sku in world.skus.values():
        sku.price *= 10
    assert world.net_worth() == before
