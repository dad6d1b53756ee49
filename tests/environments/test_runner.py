"""The runner: canonical records, sinks, invalid actions, termination reasons, resume."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import TERMINATION_REASONS, Action, Policy, ToolCall, ToolSpec
from environments.registry import make
from environments.replay import ReplayDivergence, replay_prefix
from environments.runner import make_policy, run_episode
from environments.trajectory import validate_record


class Script(Policy):
    """Plays a fixed list of actions, then ends windows; remembers what it was shown."""

    name = "script"

    def __init__(self, actions: list[Action]) -> None:
        self.actions = list(actions)
        self.seen: list[Any] = []

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        self.seen.append(history[-1]["results"][-1]["content"] if history[-1]["results"] else None)
        if self.actions:
            return self.actions.pop(0)
        return Action(tool_calls=[ToolCall(name="end_window", arguments={})])


class Raises(Policy):
    name = "raises"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        raise RuntimeError("model server fell over")


class RecordingSink:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.started: dict[str, Any] | None = None
        self.finished: dict[str, Any] | None = None

    def on_start(self, header: dict[str, Any]) -> None:
        self.started = header

    def on_step(self, step: dict[str, Any]) -> None:
        self.steps.append(step)

    def on_finish(self, record: dict[str, Any]) -> None:
        self.finished = record


def test_a_record_is_valid_and_streams_every_step_to_the_sink() -> None:
    env = make("storebench/launch-week", seed=3)
    sink = RecordingSink()
    record = run_episode(env, make_policy("smart-triage", env, 3), sink=sink)
    assert validate_record(record) == []
    assert sink.steps == record["steps"] and sink.finished is record and sink.started is not None
    header = record["header"]
    assert header["termination_reason"] == "horizon_reached" and header["termination_reason"] in TERMINATION_REASONS
    assert header["policy"]["name"] == "smart-triage" and header["source"] == "rollout" and len(header["tools"]) == 29
    first, second = record["steps"][0], record["steps"][1]
    assert first["source"] == "env" and first["message"].startswith("You run an online apparel store")
    assert second["tool_calls"][0]["id"] and second["results"][0]["call_id"] == second["tool_calls"][0]["id"]
    assert second["sim_time_end"] >= second["sim_time_start"] and isinstance(second["events"], list)
    assert header["score"]["composite"] == record["steps"][-1]["reward"]


def test_an_invalid_action_is_recorded_and_its_error_goes_back_to_the_policy() -> None:
    env = make("storebench/launch-week", seed=3)
    policy = Script([Action(error="could not parse tool call JSON", token_ids=[1, 2, 3], logprobs=[-0.1, -0.2, -0.3]), Action(stop=True)])
    record = run_episode(env, policy)
    step = record["steps"][1]
    assert step["meta"]["invalid_action"] == "could not parse tool call JSON"
    assert step["results"][0]["is_error"] and step["token_ids"] == [1, 2, 3] and step["logprobs"] == [-0.1, -0.2, -0.3]
    assert policy.seen[1] == {"error": "could not parse tool call JSON"}
    assert record["header"]["termination_reason"] == "agent_stop" and record["header"]["score"]["composite"] == 0.0


def test_repeated_errors_end_the_episode_with_too_many_errors() -> None:
    env = make("storebench/launch-week", seed=3)
    bad = [Action(tool_calls=[ToolCall(name="set_price", arguments={"price": "free"})]) for _ in range(10)]
    record = run_episode(env, Script(bad), max_consecutive_errors=5)
    assert record["header"]["termination_reason"] == "too_many_errors" and len(record["steps"]) == 6


def test_a_policy_exception_ends_with_agent_error_and_a_step_cap_with_max_steps() -> None:
    env = make("storebench/launch-week", seed=3)
    header = run_episode(env, Raises())["header"]
    assert header["termination_reason"] == "agent_error"
    assert header["termination_cause"] == {"type": "RuntimeError", "message": "model server fell over"}
    env = make("storebench/launch-week", seed=3)
    record = run_episode(env, make_policy("smart-triage", env, 3), max_steps=7)
    assert record["header"]["termination_reason"] == "max_steps" and len(record["steps"]) == 8


def test_resuming_from_a_prefix_continues_to_the_same_end() -> None:
    env = make("storebench/shipping-strike", seed=12)
    full = run_episode(env, make_policy("smart-triage", env, 12))
    cut = 150
    resumed_env = make("storebench/shipping-strike", seed=12)
    resumed = run_episode(resumed_env, make_policy("smart-triage", resumed_env, 12), start_history=full["steps"][:cut])
    assert resumed["steps"][cut - 1]["state_hash"] == full["steps"][cut - 1]["state_hash"]
    assert resumed["header"]["termination_reason"] == "horizon_reached"
    assert validate_record(resumed) == []


def test_a_tampered_prefix_is_refused_naming_the_step() -> None:
    env = make("storebench/launch-week", seed=3)
    record = run_episode(env, make_policy("smart-triage", env, 3), max_steps=40)
    steps = [dict(s) for s in record["steps"]]
    steps[12] = {**steps[12], "tool_calls": [{"id": "x", "name": "set_price", "arguments": {"sku": "P01", "price": 1.0}}]}
    with pytest.raises(ReplayDivergence) as caught:
        replay_prefix(make("storebench/launch-week", seed=3), steps)
    assert caught.value.index == 12
