"""Idea critics, the budgeted selector, and the critic-guided anchor against random selection."""

from __future__ import annotations

import json
import random
import statistics

import pytest

from environments.improve.anchors import critic_guided, oracle_critic_guided, random_select_anchor
from environments.improve.ideas import OracleCritic, affordable, heuristic_critic, random_select, select
from environments.registry import make
from environments.replay import replay_record
from environments.runner import run_episode


def test_select_spends_the_budget_on_the_highest_scores_ties_in_proposal_order() -> None:
    ids = ["c1", "c2", "c3", "c4", "c5"]
    assert select(ids, [0.1, 0.9, 0.5, 0.9, 0.2], budget=3.0) == ["c2", "c4", "c3"]
    assert select(ids, [0.1, 0.9, 0.5, 0.9, 0.2], budget=5.0, cost=2.0) == ["c2", "c4"]
    assert select(ids, [0.0] * 5, budget=1.9) == ["c1"]
    assert select(ids, [0.0] * 5, budget=0.0) == [] and select(ids, [1.0] * 5, budget=99) == ids
    assert affordable(0.6, 0.2) == 3  # 0.6 / 0.2 is 2.9999999999999996 in floating point
    with pytest.raises(AssertionError, match="5 candidates but 4 scores"):
        select(ids, [0.0] * 4, budget=1)


def test_random_select_respects_the_budget_and_its_stream() -> None:
    ids = [f"c{i}" for i in range(1, 13)]
    chosen = random_select(ids, 8.0, 2.0, random.Random(1))
    assert len(chosen) == 4 and len(set(chosen)) == 4 and chosen == random_select(ids, 8.0, 2.0, random.Random(1))


def test_the_heuristic_critic_prefers_enough_training_and_a_light_penalty() -> None:
    configs = [
        {"lr": 0.001, "reg": 0.1, "epochs": 5, "degree": 1, "features": [0]},
        {"lr": 0.1, "reg": 0.0, "epochs": 100, "degree": 2, "features": [0]},
        {"lr": 0.1, "reg": 1.0, "epochs": 100, "degree": 2, "features": [0]},
    ]
    low, best, penalised = heuristic_critic(configs)
    assert best > penalised > low


def test_the_critic_guided_anchor_records_its_critic_turn_and_verifies_only_what_the_budget_pays() -> None:
    env = make("improve/costly", seed=11)  # 4 verifications
    record = run_episode(env, critic_guided(env, 11))
    critic_steps = [s for s in record["steps"] if s.get("role") == "critic"]
    assert len(critic_steps) == 1 and critic_steps[0]["tool_calls"] == []
    advice = json.loads(critic_steps[0]["message"])
    assert len(advice["selected"]) == 4 and set(advice["selected"]) <= set(advice["scores"])
    verified = [c["arguments"]["candidate"] for s in record["steps"] for c in s["tool_calls"] if c["name"] == "verify"]
    assert verified == advice["selected"] and record["header"]["score"]["details"]["verifications"] == 4
    assert replay_record(record)["ok"] is True


def test_the_oracle_critic_scores_by_the_true_validation_score() -> None:
    env = make("improve/linear", seed=3)
    reference = env.reference.to_json()
    scores = OracleCritic(env)([reference, {**reference, "epochs": 5, "lr": 0.001}])
    assert scores[0] > scores[1] + 0.5


@pytest.mark.slow
def test_critic_guided_beats_random_selection_at_equal_budget_over_seeds() -> None:
    seeds = range(3000, 3012)
    runs: dict[str, list[float]] = {"critic": [], "random": [], "oracle": []}
    for seed in seeds:
        for which, factory in (("critic", critic_guided), ("random", random_select_anchor), ("oracle", oracle_critic_guided)):
            env = make("improve/quadratic", seed)
            runs[which].append(run_episode(env, factory(env, seed))["header"]["score"]["composite"])
    diffs = [c - r for c, r in zip(runs["critic"], runs["random"], strict=True)]
    assert statistics.mean(diffs) > 0.03
    assert statistics.mean(runs["oracle"]) >= statistics.mean(runs["critic"]) - 1e-9
