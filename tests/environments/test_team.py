"""Teams in the runner: plain records unchanged, critic triggers, consultations, harness levels, exact replay."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.registry import make
from environments.replay import replay_record
from environments.roles import RoleSpec, Team, step_role
from environments.runner import make_policy, run_episode
from environments.team import HARNESS_EVERY, STOP_AFTER
from environments.toolgym.anchors import ExpertPolicy
from environments.trajectory import validate_record


class Script(Policy):
    """Plays a fixed list of actions, then stops; keeps every history it was shown."""

    name = "script"

    def __init__(self, actions: list[Action]) -> None:
        self.actions = list(actions)
        self.histories: list[list[dict[str, Any]]] = []

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        self.histories.append(list(history))
        self.tools = [t.name for t in tools]
        return self.actions.pop(0) if self.actions else Action(stop=True)


class Tokens(Policy):
    """A critic or consultant with sampled tokens, as an LLM role has."""

    name = "tokens"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(
            message="look at the inventory",
            tool_calls=[ToolCall("get_inventory", {})],
            token_ids=[5, 6, 7],
            logprobs=[-0.5, -0.25, -0.125],
            prompt_token_ids=[1, 2],
        )


def call(name: str, **arguments: Any) -> Action:
    return Action(tool_calls=[ToolCall(name, arguments)])


def digest(record: dict[str, Any]) -> str:
    """The record's bytes without the wall-clock latency (the one field that differs between runs)."""
    steps = [{k: v for k, v in s.items() if k != "latency_ms"} for s in record["steps"]]
    return hashlib.sha256(json.dumps({**record, "steps": steps}, sort_keys=True).encode()).hexdigest()[:16]


def roles_of(record: dict[str, Any]) -> list[str]:
    return [step_role(s) for s in record["steps"]]


def test_it_records_a_plain_episode_byte_for_byte_as_before_teams() -> None:
    # Digests of the records the runner wrote before teams existed (commit 9208c9a).
    env = make("storebench/launch-week", seed=3)
    plain = run_episode(env, make_policy("smart-triage", env, 3), max_steps=60)
    assert digest(plain) == "bf203d6a9e4b23d3" and "team" not in plain["header"] and "roles" not in plain["header"]
    env = make("storebench/launch-week", seed=3)
    assert digest(run_episode(env, Team(actor=make_policy("smart-triage", env, 3)), max_steps=60)) == "bf203d6a9e4b23d3"
    assert digest(run_episode(make("toolgym/lookup", seed=4), ExpertPolicy())) == "9507cbaaab3acb5b"


def test_it_gives_the_critic_a_turn_every_k_actor_steps_and_the_actor_reads_the_advice() -> None:
    env = make("storebench/launch-week", seed=3)
    actor = make_policy("smart-triage", env, 3)
    seen: list[str | None] = []
    original = actor.act
    actor.act = lambda history, tools: seen.append(history[-1].get("role")) or original(history, tools)  # type: ignore[method-assign]
    record = run_episode(env, Team(actor=actor, critic=RoleSpec(policy=make_policy("rule-critic", env, 3), every=5)), max_steps=12)
    critic = [s for s in record["steps"] if s.get("role") == "critic"]
    assert [(s["meta"]["trigger"], s["meta"]["advises_step"]) for s in critic] == [("schedule", 5), ("schedule", 11)]
    assert all(s["source"] == "agent" and s["tool_calls"] == [] and s["message"] for s in critic)
    assert seen.count("critic") == 2  # the advice was the last step of the history the actor acted on next
    assert record["header"]["roles"]["critic"] == {"turns": 2, "tokens": 0, "cost": 0.0, "calls": 0}
    assert record["header"]["team"]["critic"] == {
        "policy": {"name": "rule-critic", "kind": "scripted"},
        "every": 5,
        "on_request": False,
        "on_error": False,
    }
    assert validate_record(record) == [] and replay_record(record)["ok"]


def test_it_gives_the_critic_a_turn_after_a_failed_call_naming_the_error() -> None:
    env = make("storebench/launch-week", seed=3)
    actor = Script([call("set_price", price="free"), call("get_inventory")])
    record = run_episode(env, Team(actor=actor, critic=RoleSpec(policy=make_policy("rule-critic", env, 3), on_error=True)))
    assert roles_of(record) == ["env", "actor", "critic", "actor", "actor"]
    advice = record["steps"][2]
    assert advice["meta"] == {"trigger": "error", "advises_step": 1}
    assert advice["message"].startswith('Your call set_price({"price": "free"}) failed: arguments.sku: required field is missing')
    assert actor.histories[1][-1] is advice or actor.histories[1][-1] == advice


def test_it_answers_ask_critic_with_the_advice_and_records_the_request() -> None:
    env = make("storebench/launch-week", seed=3)
    actor = Script([call("ask_critic", question="am I done?")])
    team = Team(actor=actor, critic=RoleSpec(policy=Tokens(), on_request=True, every=1))
    record = run_episode(env, team)
    assert "ask_critic" in actor.tools and "consult" not in actor.tools
    asked, critic = record["steps"][1], record["steps"][2]
    assert asked["results"][0]["content"] == {"advice": "look at the inventory"} and not asked["results"][0]["is_error"]
    assert critic["role"] == "critic" and critic["meta"]["trigger"] == "request" and critic["meta"]["question"] == "am I done?"
    assert critic["meta"]["advises_step"] == 1 and critic["meta"]["answers_call"] == asked["tool_calls"][0]["id"]
    assert critic["token_ids"] == [5, 6, 7] and critic["logprobs"] == [-0.5, -0.25, -0.125] and critic["tool_calls"] == []
    assert [s.get("role") for s in record["steps"]].count("critic") == 1  # the schedule does not advise twice on one step
    assert record["header"]["roles"]["critic"] == {"turns": 1, "tokens": 5, "cost": 0.0, "calls": 1}


def test_a_consultation_is_answered_by_the_runner_costs_reward_and_never_reaches_the_env() -> None:
    env = make("storebench/launch-week", seed=3)
    fresh = make("storebench/launch-week", seed=3)
    fresh.reset()
    actor = Script([call("consult", question="what next?"), call("consult"), call("consult", question=7)])
    record = run_episode(env, Team(actor=actor, consultant=RoleSpec(policy=make_policy("oracle", env, 3), cost=0.02)))
    assert "consult" in actor.tools and "ask_critic" not in actor.tools
    answer = record["steps"][1]["results"][0]["content"]
    assert set(answer) == {"suggested_calls", "reasoning"} and answer["suggested_calls"][0]["name"] in {t.name for t in env.tools()}
    consultant = record["steps"][2]
    assert consultant["role"] == "consultant" and consultant["tool_calls"] == [] and consultant["meta"]["cost"] == 0.02
    assert consultant["meta"]["suggested_calls"] == answer["suggested_calls"] and consultant["meta"]["asked_at"] == 1
    assert env.status()["ops-left"] == "40 of 40 operations left" and env.state_hash() == fresh.state_hash()
    refused = record["steps"][5]["results"][0]
    assert refused["is_error"] and refused["content"] == {"error": "arguments.question: expected text, got 7"}
    header = record["header"]
    assert header["roles"]["consultant"] == {"turns": 2, "tokens": 0, "cost": 0.04, "calls": 2}
    assert header["reward"] == round(header["score"]["composite"] - 0.04, 9) == -0.04
    assert replay_record(record)["ok"]


def test_a_plain_actor_calling_a_runner_tool_is_refused_without_the_env() -> None:
    env = make("toolgym/lookup", seed=4)
    record = run_episode(env, Script([call("consult"), call("lookup", item="x")]))
    assert record["steps"][1]["results"][0] == {
        "call_id": "call_1_0",
        "content": {"error": "consult is not available in this episode"},
        "is_error": True,
    }
    assert env.world.calls == 1 and replay_record(record)["ok"]


def test_guided_harness_verifies_once_before_the_actor_finishes() -> None:
    env = make("storebench/launch-week", seed=3)
    actor = Script([Action(message="done", stop=True), Action(message="verified", stop=True)])
    record = run_episode(env, Team(actor=actor, harness_level="guided"))
    assert roles_of(record) == ["env", "actor", "harness", "actor"]
    verify = record["steps"][2]
    assert verify["source"] == "system" and verify["meta"] == {"decision": "verify", "on": "agent_stop"}
    assert record["header"]["termination_reason"] == "agent_stop" and record["header"]["team"]["harness_level"] == "guided"


@pytest.mark.parametrize("level", ["full", "guided"])
def test_the_verify_check_never_holds_back_an_environment_that_already_ended(level: str) -> None:
    env = make("phantom/lookup-dev", seed=3)  # the oracle's answer ends the episode inside the environment
    record = run_episode(env, Team(actor=make_policy("oracle", env, 3), harness_level=level))
    assert record["header"]["termination_reason"] == "agent_stop" and record["header"]["score"]["passed"]
    assert not any(r.get("is_error") for s in record["steps"] for r in s.get("results") or [])
    assert roles_of(record)[-1] == "actor"  # the answer is the last step: no verify prompt, no second answer


def test_guided_harness_tracks_every_k_steps_and_full_adds_hints_and_the_stop_check() -> None:
    env = make("storebench/launch-week", seed=3)
    record = run_episode(env, Team(actor=make_policy("smart-triage", env, 3), harness_level="guided"), max_steps=HARNESS_EVERY * 2)
    decisions = [s["meta"]["decision"] for s in record["steps"] if s.get("role") == "harness"]
    assert decisions == ["track", "verify", "track"]  # verify: before the last allowed step
    track = next(s for s in record["steps"] if s.get("role") == "harness")
    assert (
        "list_products" not in track["meta"]["unused_tools"]
        and "get_product" in track["meta"]["unused_tools"]
        and track["meta"]["failing"] == []
    )
    env = make("storebench/launch-week", seed=3)
    record = run_episode(env, Team(actor=make_policy("smart-triage", env, 3), harness_level="full"), max_steps=HARNESS_EVERY)
    assert [s["meta"]["decision"] for s in record["steps"] if s.get("role") == "harness"] == ["verify", "track", "hint"]
    hint = record["steps"][-1]
    assert hint["meta"]["tool"] == track["meta"]["unused_tools"][0] and hint["message"].startswith(
        f"Investigate next: {hint['meta']['tool']}"
    )


@pytest.mark.parametrize(("level", "stops"), [("full", True), ("light", True), ("guided", False), ("tools-only", False)])
def test_the_stop_check_ends_identical_failing_calls_only_at_full_and_light(level: str, stops: bool) -> None:
    env = make("storebench/launch-week", seed=3)
    bad = [call("set_price", price="free") for _ in range(STOP_AFTER + 2)]
    record = run_episode(env, Team(actor=Script(bad), harness_level=level), max_consecutive_errors=50)
    harness = [s["meta"]["decision"] for s in record["steps"] if s.get("role") == "harness"]
    if stops:
        assert harness[-1] == "stop" and record["header"]["termination_reason"] == "too_many_errors"
        assert sum(1 for r in roles_of(record) if r == "actor") == STOP_AFTER
    else:
        assert "stop" not in harness and record["header"]["termination_reason"] == "agent_stop"
    assert ("roles" in record["header"]) == (level != "tools-only")


def test_a_full_team_episode_replays_exactly_on_storebench_and_toolgym() -> None:
    env = make("storebench/launch-week", seed=3)
    team = Team(
        actor=make_policy("smart-triage", env, 3),
        critic=RoleSpec(policy=make_policy("rule-critic", env, 3), every=3, on_error=True),
        consultant=RoleSpec(policy=make_policy("oracle", env, 3), cost=0.01),
        harness_level="full",
    )
    record = run_episode(env, team, max_steps=40)
    assert validate_record(record) == [] and replay_record(record) == {**replay_record(record), "ok": True}
    assert {"critic", "harness"} <= set(roles_of(record))
    actor_hashes = [s["state_hash"] for s in record["steps"] if step_role(s) == "actor"]
    assert len(set(actor_hashes)) == len(actor_hashes) == 40
    env = make("toolgym/lookup", seed=4)
    actor = Script(
        [call("consult"), call("ask_critic"), call("lookup", item="nope"), call("lookup", item="nope"), call("lookup", item="nope")]
    )
    critic, consultant = RoleSpec(policy=Tokens(), on_request=True, on_error=True), RoleSpec(policy=ExpertPolicy(), cost=0.1)
    record = run_episode(env, Team(actor=actor, critic=critic, consultant=consultant, harness_level="light"))
    assert record["steps"][1]["results"][0]["content"]["suggested_calls"][0]["name"] == "lookup"
    assert replay_record(record)["ok"] and record["header"]["termination_reason"] in ("too_many_errors", "max_steps")


def test_resuming_a_team_episode_keeps_counting_its_prefix() -> None:
    env = make("storebench/launch-week", seed=3)
    critic = RoleSpec(policy=make_policy("rule-critic", env, 3), every=4)
    full = run_episode(env, Team(actor=make_policy("smart-triage", env, 3), critic=critic, harness_level="guided"), max_steps=30)
    again = make("storebench/launch-week", seed=3)
    cut = 20
    resumed = run_episode(
        again,
        Team(actor=make_policy("smart-triage", again, 3), critic=critic, harness_level="guided"),
        max_steps=30,
        start_history=full["steps"][:cut],
    )
    assert resumed["steps"][cut - 1] == full["steps"][cut - 1] and replay_record(resumed)["ok"]
    counts = {role: row["turns"] for role, row in resumed["header"]["roles"].items()}
    assert counts == {role: row["turns"] for role, row in full["header"]["roles"].items()} == {"actor": 30, "critic": 7, "harness": 7}


class Follower(Policy):
    """Consults before every move and makes the first call the consultant suggests."""

    name = "follower"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        last = next((s for s in reversed(history) if step_role(s) == "actor"), {})
        if last.get("tool_calls") and last["tool_calls"][0]["name"] == "consult":
            suggested = last["results"][0]["content"]["suggested_calls"][0]
            return Action(tool_calls=[ToolCall(suggested["name"], suggested["arguments"])])
        return call("consult", question="what next?")


def test_an_actor_that_follows_its_consultant_passes_and_pays_for_each_consultation() -> None:
    env = make("toolgym/lookup", seed=4)
    record = run_episode(env, Team(actor=Follower(), consultant=RoleSpec(policy=ExpertPolicy(), cost=0.1)))
    header = record["header"]
    assert roles_of(record) == ["env", "actor", "consultant", "actor", "actor", "consultant", "actor"]
    assert header["score"]["composite"] == 1.0 and header["reward"] == 0.8 and env.world.calls == 2  # consults never reach the env
    assert header["roles"]["consultant"] == {"turns": 2, "tokens": 0, "cost": 0.2, "calls": 2}
    assert replay_record(record)["ok"]
