"""improve: the tools and their budget, determinism, the contract, anchors against the calibrated thresholds."""

from __future__ import annotations

import statistics

import pytest

from environments.contract import check_task
from environments.core import ToolCall
from environments.improve.env import ImproveEnv
from environments.improve.model import baseline_config, evaluate, make_dataset
from environments.registry import get_task, list_tasks, make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode


def call(env: ImproveEnv, name: str, **arguments: object) -> object:
    return env.step(ToolCall(name, dict(arguments)))


def test_it_charges_each_verification_and_refuses_what_the_budget_cannot_pay() -> None:
    env = make("improve/costly", seed=5)  # budget 8, a verification costs 2
    assert isinstance(env, ImproveEnv)
    ids = [env.step(ToolCall("propose", {"epochs": e, "lr": 0.1})).content["candidate"] for e in (20, 50, 100)]
    ids += [env.step(ToolCall("propose", {"lr": lr})).content["candidate"] for lr in (0.01, 0.03)]
    assert ids == ["c1", "c2", "c3", "c4", "c5"]
    lefts = [env.step(ToolCall("verify", {"candidate": i})).content.get("budget_left") for i in ids[:4]]
    assert lefts == [6.0, 4.0, 2.0, 0.0]
    refused = env.step(ToolCall("verify", {"candidate": "c5"}))
    assert refused.is_error and refused.content["error"] == "budget: 0.0 left, a verification costs 2.0"
    again = env.step(ToolCall("verify", {"candidate": "c1"}))  # already paid for
    assert not again.is_error and again.content["budget_left"] == 0.0
    unverified = env.step(ToolCall("adopt", {"candidate": "c5"}))
    assert unverified.is_error and "c5 is not verified" in unverified.content["error"]


def test_it_keeps_one_id_per_config_and_validates_proposals() -> None:
    env = make("improve/linear", seed=1)
    first = env.step(ToolCall("propose", {"epochs": 100})).content
    assert env.step(ToolCall("propose", {"epochs": 100.0})).content["candidate"] == first["candidate"] == "c1"
    assert env.step(ToolCall("propose", {"degree": True})).is_error
    assert "is not one of" in env.step(ToolCall("propose", {"lr": 0.5})).content["error"]
    assert env.step(ToolCall("propose", {"features": [8]})).content["error"] == "arguments.features[0]: 8 is above the maximum 7"
    assert env.step(ToolCall("propose", {})).is_error
    assert env.step(ToolCall("verify", {"candidate": "c9"})).content["error"] == "candidate: no candidate 'c9'; propose one first"


def test_the_score_normalises_test_r2_between_baseline_and_reference_and_is_0_until_finished() -> None:
    env = make("improve/quadratic", seed=2)
    assert isinstance(env, ImproveEnv)
    candidate = env.step(ToolCall("propose", env.reference.to_json())).content["candidate"]
    env.step(ToolCall("verify", {"candidate": candidate}))
    env.step(ToolCall("adopt", {"candidate": candidate}))
    assert env.score().composite == 0.0
    result = env.step(ToolCall("finish", {}))
    assert result.done and result.reward == 1.0 and env.termination_reason == "agent_stop"
    details = env.score().details
    assert details["test_r2"] == details["reference_test_r2"] > details["baseline_test_r2"] + 0.5


def test_training_is_deterministic_and_fast_enough_to_verify_in_milliseconds() -> None:
    spec = get_task("improve/sparse").spec
    a, b = make_dataset("sparse", spec, 9), make_dataset("sparse", spec, 9)
    assert a.x == b.x and a.informative == b.informative
    assert make_dataset("sparse", spec, 10).x != a.x
    config = baseline_config(10).changed({"epochs": 100, "lr": 0.1, "degree": 2})
    assert evaluate(a, config, "val") == evaluate(b, config, "val") > 0.3


def test_the_same_seed_and_actions_give_the_same_chain_and_episodes_replay() -> None:
    records = [run_episode(env, make_policy("greedy", env, 4)) for env in (make("improve/sparse", 4), make("improve/sparse", 4))]
    assert [s["state_hash"] for s in records[0]["steps"]] == [s["state_hash"] for s in records[1]["steps"]]
    assert replay_record(records[0])["ok"] is True


@pytest.mark.parametrize("task", [t.id for t in list_tasks("improve")])
def test_every_task_keeps_the_contract(task: str) -> None:
    assert check_task(task, seed=7, steps=40) == []


@pytest.mark.slow
@pytest.mark.parametrize("task", [t.id for t in list_tasks("improve")])
def test_anchors_fall_where_calibration_put_the_threshold(task: str) -> None:
    threshold = get_task(task).pass_threshold
    assert 0.3 < threshold <= 0.95
    means = {}
    for anchor in ("do-nothing", "random-valid", "greedy", "oracle"):
        scores = []
        for seed in range(2000, 2006):
            env = make(task, seed)
            scores.append(run_episode(env, make_policy(anchor, env, seed))["header"]["score"]["composite"])
        means[anchor] = statistics.mean(scores)
    assert means["do-nothing"] == 0.0 < threshold and means["oracle"] == 1.0
    assert means["random-valid"] < means["greedy"]
