"""Workflow episodes: the plan format's validation, execution order, per-node and per-role outcomes, replay."""

from __future__ import annotations

import json
from typing import Any

import pytest

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.improve.anchors import AdoptBest, Explorer
from environments.registry import make
from environments.replay import replay_record
from environments.toolgym.anchors import ExpertPolicy
from environments.trajectory import validate_record
from environments.workflow import (
    MAX_NODES,
    WORKFLOW_FORMAT,
    ScriptedGenerator,
    WorkflowError,
    linear_plan,
    role_rewards,
    run_workflow,
    topological_order,
    workflow_parse,
)

ROLES = {"builder", "executor"}


def node(node_id: str, role: str = "builder", depends_on: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "role": role, "instruction": f"do {node_id}", "depends_on": depends_on or [], **extra}


def plan(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"format": WORKFLOW_FORMAT, "nodes": list(nodes)}


@pytest.mark.parametrize(
    ("workflow", "message"),
    [
        (plan(node("a", depends_on=["b"]), node("b", depends_on=["c"]), node("c", depends_on=["a"])), "a cycle among 'a', 'b', 'c'"),
        (plan(node("a", role="painter")), "node 'a'.role: 'painter' is not a role of the team (builder, executor)"),
        (plan(*[node(f"n{i}") for i in range(MAX_NODES + 1)]), f"at most {MAX_NODES} nodes, got {MAX_NODES + 1}"),
        (plan(node("a"), node("a")), "node 'a'.id: declared 2 times"),
        (plan(node("a", depends_on=["ghost"])), "node 'a'.depends_on: 'ghost' is not a node"),
        (plan(node("a", depends_on=["a"])), "node 'a'.depends_on: a node cannot depend on itself"),
        (plan(node("a", max_steps=0)), "node 'a'.max_steps: expected a whole number from 1 to 50, got 0"),
        (plan(node("a", max_steps=True)), "node 'a'.max_steps"),
        (plan(node("a", colour="red")), "node 'a': unexpected field(s) colour"),
        (plan(node("Bad Id")), "workflow.nodes[0].id: 'Bad Id' is not an id"),
        (plan(), "workflow.nodes: expected a non-empty list"),
        ({"format": "practicum.workflow/0", "nodes": [node("a")]}, "workflow.format: expected 'practicum.workflow/1'"),
        ("{not json", "workflow: not JSON"),
    ],
)
def test_it_refuses_a_bad_workflow_naming_the_node_and_field(workflow: Any, message: str) -> None:
    with pytest.raises(WorkflowError) as caught:
        workflow_parse(workflow, roles=ROLES)
    assert message in str(caught.value)


def test_it_orders_nodes_dependencies_first_and_otherwise_as_declared() -> None:
    workflow = workflow_parse(
        json.dumps(
            plan(
                node("report", depends_on=["left", "right"]),
                node("right", depends_on=["root"]),
                node("left", depends_on=["root"]),
                node("root"),
            )
        ),
        roles=ROLES,
    )
    assert [n.id for n in topological_order(workflow)] == ["root", "right", "left", "report"]


def test_it_round_trips_the_declared_format() -> None:
    data = linear_plan(("look", "builder", "look it up"), ("answer", "executor", "answer"), max_steps=2)
    assert workflow_parse(data, roles=ROLES).to_json() == data


class Boom(Policy):
    name = "boom"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        raise RuntimeError("no idea")


class Lookup(Policy):
    name = "lookup-only"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[ToolCall("lookup", {"item": "no-such-thing"}, "c")])


def test_it_runs_a_toolgym_plan_role_by_role_and_replays_exactly() -> None:
    env = make("toolgym/lookup", seed=3)
    generator = ScriptedGenerator(
        linear_plan(("look", "builder", "Look the item up."), ("answer", "executor", "Answer with its color."), max_steps=1)
    )
    record = run_workflow(env, generator, {"builder": ExpertPolicy(), "executor": ExpertPolicy()})
    header = record["header"]
    assert (
        header["score"]["composite"] == 1.0 and header["termination_reason"] == "horizon_reached"
    )  # the env ended it (toolgym names no reason)
    roles = [(s["source"], s.get("role"), [c["name"] for c in s["tool_calls"]]) for s in record["steps"]]
    assert roles == [
        ("env", None, []),
        ("agent", "generator", []),
        ("system", "builder", []),
        ("agent", "builder", ["lookup"]),
        ("system", "executor", []),
        ("agent", "executor", ["answer"]),
    ]
    nodes = header["workflow"]["nodes"]
    assert [(n["id"], n["status"], n["steps"]) for n in nodes] == [("look", "done", 1), ("answer", "done", 1)]
    assert nodes[1]["reward"] == 1.0 and nodes[1]["score_delta"] == 1.0 and nodes[0]["score_delta"] == 0.0
    assert header["workflow"]["graph"]["format"] == WORKFLOW_FORMAT
    assert header["roles"]["builder"]["turns"] == 1 and header["roles"]["generator"]["turns"] == 1
    assert role_rewards(record) == {"generator": 1.0, "builder": 1.0, "executor": 1.0}
    assert validate_record(record) == []
    assert replay_record(record)["ok"] is True


def test_a_failed_node_skips_what_depends_on_it_and_shares_the_reward() -> None:
    env = make("toolgym/lookup", seed=3)
    workflow = plan(
        node("look", max_steps=1), node("answer", role="executor", depends_on=["look"]), node("aside", role="executor", max_steps=1)
    )
    record = run_workflow(env, ScriptedGenerator(workflow), {"builder": Lookup(), "executor": ExpertPolicy()})
    outcome = record["header"]["workflow"]
    assert [(n["id"], n["status"]) for n in outcome["nodes"]] == [("look", "failed"), ("answer", "skipped"), ("aside", "done")]
    assert outcome["roles"]["executor"] == {"nodes": 2, "done": 1, "failed": 0, "skipped": 1, "steps": 1, "reward": 0.0}
    assert outcome["roles"]["generator"]["done"] == 1 and outcome["roles"]["generator"]["valid"] is True
    assert replay_record(record)["ok"] is True


def test_a_policy_that_raises_fails_its_node_only() -> None:
    env = make("toolgym/lookup", seed=3)
    record = run_workflow(
        env,
        ScriptedGenerator(plan(node("a", max_steps=2), node("b", role="executor", max_steps=2))),
        {"builder": Boom(), "executor": ExpertPolicy()},
    )
    assert [n["status"] for n in record["header"]["workflow"]["nodes"]] == ["failed", "done"]
    assert record["header"]["score"]["composite"] == 1.0
    assert role_rewards(record) == {"generator": 0.5, "builder": 0.0, "executor": 1.0}


def test_an_invalid_plan_ends_the_episode_as_the_generators_error() -> None:
    env = make("toolgym/lookup", seed=3)
    record = run_workflow(env, ScriptedGenerator(plan(node("a", role="painter"))), {"builder": ExpertPolicy()})
    header = record["header"]
    assert header["termination_reason"] == "agent_error" and "painter" in header["termination_cause"]["message"]
    assert record["steps"][-1]["role"] == "generator" and "painter" in record["steps"][-1]["meta"]["workflow_error"]
    assert header["workflow"]["graph"] is None and role_rewards(record) == {"generator": 0.0}


def test_an_improve_plan_explores_then_commits_with_per_role_outcomes() -> None:
    env = make("improve/quadratic", seed=3)
    workflow = linear_plan(("explore", "builder", "Propose and verify."), ("commit", "executor", "Adopt the best, finish."), max_steps=20)
    record = run_workflow(env, ScriptedGenerator(workflow), {"builder": Explorer(env, 3), "executor": AdoptBest()})
    header = record["header"]
    explore, commit = header["workflow"]["nodes"]
    assert explore["status"] == commit["status"] == "done"
    assert explore["steps"] == 13 and explore["score_delta"] == 0.0  # six proposals, six verifications, a stop
    assert commit["score_delta"] == header["score"]["composite"] > 0.5
    assert header["termination_reason"] == "agent_stop" and header["score"]["details"]["verifications"] == 6
    assert replay_record(record)["ok"] is True
    again = run_workflow(
        make("improve/quadratic", seed=3), ScriptedGenerator(workflow), {"builder": Explorer(env, 3), "executor": AdoptBest()}
    )
    assert [s["state_hash"] for s in again["steps"]] == [s["state_hash"] for s in record["steps"]]


def test_a_builder_acting_for_another_role_keeps_that_role_on_its_step() -> None:
    from environments.improve.anchors import critic_guided

    env = make("improve/linear", seed=2)
    record = run_workflow(env, ScriptedGenerator(plan(node("search", max_steps=20))), {"builder": critic_guided(env, 2)})
    roles = [s.get("role") for s in record["steps"] if s["source"] == "agent"]
    assert roles.count("critic") == 1 and roles[0] == "generator" and set(roles) == {"generator", "builder", "critic"}
    assert record["header"]["roles"]["critic"]["turns"] == 1
    assert replay_record(record)["ok"] is True
