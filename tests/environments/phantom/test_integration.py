"""Phantom through the shared machinery: registry, policies, runner, replay, trajectory validation."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Policy, ToolSpec
from environments.policies import make_policy, policy_names
from environments.registry import list_tasks, make, task_set
from environments.replay import replay_record
from environments.runner import run_episode
from environments.trajectory import validate_record


class DoNothing(Policy):
    name = "do-nothing"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(stop=True)


def test_the_task_grid_is_registered_with_one_universe_stream_per_split() -> None:
    tasks = list_tasks("phantom")
    assert len(tasks) == 21 and {t.split for t in tasks} == {"train", "dev", "test"}
    assert {t.id for t in task_set("phantom/eval")} == {t.id for t in tasks if t.split in ("dev", "test")}
    assert make("phantom/lookup-train", 0).universe.spec.split == "train"
    dev, test = make("phantom/lookup-dev", 0), make("phantom/lookup-test", 0)
    assert dev.universe.spec.seed != test.universe.spec.seed and dev.question != test.question


def test_anchors_are_registered_for_phantom() -> None:
    assert {"oracle", "keyword", "random"} <= set(policy_names("phantom"))


@pytest.mark.parametrize("name", ["oracle", "keyword", "random"])
def test_the_runner_records_a_valid_episode_that_replays_exactly(name: str) -> None:
    env = make("phantom/bridge-dev", 3)
    record = run_episode(env, make_policy(name, env, 3))
    assert validate_record(record) == []
    header = record["header"]
    assert header["env"] == "phantom" and header["task"] == "bridge-dev" and header["termination_reason"] == "agent_stop"
    assert 0.0 <= header["score"]["composite"] <= 1.0
    assert record["steps"][0]["source"] == "env" and "Question:" in record["steps"][0]["message"]
    assert record["steps"][-1]["tool_calls"][0]["name"] == "answer"
    assert replay_record(record) == {
        "ok": True,
        "steps": len(record["steps"]),
        "divergence": None,
        "composite": header["score"]["composite"],
    }
    if name == "oracle":
        assert header["score"]["composite"] == 1.0 and header["score"]["components"]["evidence_recall"] == 1.0


def test_replay_detects_a_tampered_record() -> None:
    env = make("phantom/lookup-dev", 1)
    record = run_episode(env, make_policy("oracle", env, 1))
    record["steps"][1]["tool_calls"][0]["arguments"] = {"query": "something else entirely"}
    report = replay_record(record)
    assert not report["ok"] and report["divergence"]["step"] == 1


def test_the_runner_stops_at_the_tasks_budget() -> None:
    env = make("phantom/lookup-dev", 2)
    record = run_episode(env, make_policy("random", env, 2), max_steps=1)
    assert record["header"]["termination_reason"] == "max_steps" and record["header"]["score"]["composite"] == 0.0
    assert len(record["steps"]) == 2


@pytest.mark.slow
def test_doing_nothing_fails_every_phantom_task() -> None:
    for task in list_tasks("phantom"):
        env = make(task.id, 0)
        record = run_episode(env, DoNothing())
        assert record["header"]["termination_reason"] == "agent_stop"
        assert record["header"]["score"]["composite"] == 0.0 and not record["header"]["score"]["passed"], task.id
