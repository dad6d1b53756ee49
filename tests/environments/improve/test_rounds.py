"""improve-rounds: rounds and their budget, the improvement metrics, the score, anchors, replay and the contract."""

from __future__ import annotations

import pytest

from environments.contract import check_task
from environments.core import ToolCall
from environments.improve.problems import CHECK_CASES
from environments.improve.rounds import RoundsEnv, improvement_metrics
from environments.registry import get_task, list_tasks, make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode


def rounds_env(task: str, seed: int) -> RoundsEnv:
    env = make(f"improve-rounds/{task}", seed)
    assert isinstance(env, RoundsEnv)
    return env


def play(task: str, seed: int, anchor: str) -> dict:
    env = make(f"improve-rounds/{task}", seed)
    return run_episode(env, make_policy(anchor, env, seed))["header"]["score"]


def test_improvement_metrics_by_hand() -> None:
    # best so far: 0.2 0.2 0.5 0.5 0.9 0.9 from 0.1; the last third is rounds 5-6, which lift 0.5 to 0.9
    got = improvement_metrics([0.2, 0.2, 0.5, 0.4, 0.9, 0.9], start=0.1)
    assert got == {"rounds": 6, "final": 0.9, "gain": 0.8, "per_round": 0.133333, "improving": 3, "late_share": 0.5}
    assert improvement_metrics([0.5], 0.0)["late_share"] == 1.0  # one round is its own last third
    assert improvement_metrics([0.0, 0.1], 0.3) == {
        "rounds": 2,
        "final": 0.3,
        "gain": 0.0,
        "per_round": 0.0,
        "improving": 0,
        "late_share": 0.0,
    }
    assert improvement_metrics([], 0.2)["per_round"] == 0.0


def test_a_round_scores_the_check_cases_and_shows_one_counterexample() -> None:
    env = rounds_env("digits", 3)
    cases = env.problem.cases["check"]
    result = env.step(ToolCall("submit", {"program": "return x"})).content
    one_digit = sum(c["x"] < 10 for c in cases)  # "return x" is right exactly on the one-digit numbers
    assert result["score"] == round(one_digit / CHECK_CASES, 6) and result["passed"] == one_digit
    first_wrong = next(c for c in cases if c["x"] >= 10)
    assert result["failing"] == {"inputs": first_wrong, "expected": sum(map(int, str(first_wrong["x"]))), "got": first_wrong["x"]}
    assert (result["round"], result["budget_left"]) == (1, 7)


def test_a_malformed_program_costs_nothing_and_a_spent_budget_is_refused() -> None:
    env = rounds_env("gcd", 1)
    refused = env.step(ToolCall("submit", {"program": "return a ** b"}))
    assert refused.is_error and refused.content["error"] == "program: expected a variable name at token 4, found '*'"
    assert env.step(ToolCall("submit", {"source": "return 1"})).is_error  # unknown argument: schema
    assert env.step(ToolCall("submit", {"program": "x = 1;" * 334 + "return x"})).is_error  # 2,008 characters: schema
    deep = env.step(ToolCall("submit", {"program": "return " + "(" * 40 + "a" + ")" * 40}))
    assert deep.is_error and deep.content["error"] == "program: nesting deeper than 24"
    assert env.world.budget_left == 8 and env.world.rounds == []
    for _ in range(8):
        assert not env.step(ToolCall("submit", {"program": "while 1 { }"})).is_error  # runs out of operations: wrong, not fatal
    spent = env.step(ToolCall("submit", {"program": "return 1"}))
    assert spent.is_error and spent.content["error"] == "budget: all 8 evaluations are spent; finish"
    assert [r["score"] for r in env.world.rounds] == [0.0] * 8


def test_tuning_changes_apply_to_the_best_config_and_rounds_keep_whole_configs() -> None:
    env = rounds_env("tune", 2)
    first = env.step(ToolCall("submit", {"epochs": 100, "lr": 0.1})).content
    assert first["solution"] == {**env.problem.baseline.to_json(), "epochs": 100, "lr": 0.1}
    assert first["score"] > env.problem.start_score
    worse = env.step(ToolCall("submit", {"lr": 0.001})).content  # from the best (round 1): 100 epochs at lr 0.001
    assert worse["solution"]["epochs"] == 100 and worse["score"] < first["score"]
    third = env.step(ToolCall("submit", {"degree": 2})).content  # still from round 1, the best: lr 0.1
    assert third["solution"]["lr"] == 0.1 and third["solution"]["degree"] == 2
    fresh = rounds_env("tune", 2)
    unbeaten = fresh.step(ToolCall("submit", {"reg": 1.0})).content  # 5 epochs at lr 0.001: no better than the baseline
    assert unbeaten["score"] == fresh.problem.start_score == 0.0
    assert fresh.step(ToolCall("submit", {"epochs": 20})).content["solution"] == {**fresh.problem.baseline.to_json(), "epochs": 20}


def test_the_best_round_is_scored_on_hidden_cases_only_when_finished() -> None:
    env = rounds_env("digits", 0)
    reference = env.problem.reference["program"]
    env.step(ToolCall("submit", {"program": reference}))
    env.step(ToolCall("submit", {"program": "return x"}))  # a worse later round does not replace the best
    assert env.score().composite == 0.0
    done = env.step(ToolCall("finish", {}))
    assert done.done and done.reward == 1.0 and env.termination_reason == "agent_stop"
    assert env.score().details["best_round"] == 1 and env.score().details["round_scores"][0] == 1.0


def anchors_order(task: str) -> None:
    scores = {a: play(task, 5, a) for a in ("do-nothing", "first-try", "improver", "chain", "final-only", "oracle")}
    assert scores["do-nothing"]["composite"] == 0.0
    assert scores["first-try"]["composite"] < scores["improver"]["composite"] <= scores["oracle"]["composite"] == 1.0
    rising = scores["chain"]["details"]["round_scores"]
    assert len(rising) >= 2 and all(b > a for a, b in zip(rising, rising[1:], strict=False))
    assert scores["final-only"]["composite"] == scores["chain"]["composite"]  # the same last solution
    assert scores["final-only"]["details"]["rounds"] == 1


@pytest.mark.parametrize("task", ["digits", "gcd", "isqrt"])
def test_the_anchors_order_and_the_chain_rises_every_round(task: str) -> None:
    anchors_order(task)


@pytest.mark.slow
def test_the_tuning_anchors_order_too() -> None:
    anchors_order("tune")


def test_the_same_seed_and_actions_give_the_same_chain_and_episodes_replay() -> None:
    records = [run_episode(env, make_policy("improver", env, 4)) for env in (make("improve-rounds/gcd", 4), make("improve-rounds/gcd", 4))]
    assert [s["state_hash"] for s in records[0]["steps"]] == [s["state_hash"] for s in records[1]["steps"]]
    assert replay_record(records[0])["ok"] is True
    other = run_episode(env := make("improve-rounds/gcd", 5), make_policy("improver", env, 5))
    assert other["steps"][-1]["state_hash"] != records[0]["steps"][-1]["state_hash"]


@pytest.mark.parametrize("task", [t.id for t in list_tasks("improve-rounds")])
def test_every_task_keeps_the_contract(task: str) -> None:
    assert check_task(task, seed=7, steps=30) == []


@pytest.mark.parametrize("task", [t.id for t in list_tasks("improve-rounds")])
def test_do_nothing_fails_and_the_improver_passes_on_a_held_out_seed(task: str) -> None:
    threshold = get_task(task).pass_threshold
    assert 0.1 < threshold <= 0.95
    assert play(task.split("/")[1], 2001, "do-nothing")["passed"] is False
    assert play(task.split("/")[1], 2001, "oracle")["passed"] is True
