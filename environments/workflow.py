"""Workflow episodes: a generator role writes a plan (a small graph of role steps) that other roles carry out.

    workflow = workflow_parse(data, roles={"builder", "executor"})      # WorkflowError names the node and field
    record = run_workflow(env, generator, {"builder": b, "executor": e})  # env reset; any Policies
    role_rewards(record)                                                 # {"generator": 0.8, "builder": 1.0, ...}

The format, "practicum.workflow/1" (JSON):

    {"format": "practicum.workflow/1",
     "nodes": [{"id": "explore", "role": "builder", "instruction": "...", "depends_on": [], "max_steps": 8}, ...]}

An id is a ROLE_NAME-like name, unique; a role is one of the team's roles; `depends_on` names earlier or later
nodes (the graph must be acyclic); `max_steps` (default 8) bounds the node's turns. At most MAX_NODES nodes.

The episode: step 0 is the environment's opening; step 1 is the generator's turn (role "generator", its
message the workflow, no env call). Then each node in topological order (ties: declaration order): a system
step carries the node's instruction into the history, and the node's role policy acts for up to `max_steps`
steps (recorded with that role and `meta.workflow_node`) until it stops (Action.stop) or the environment
ends. A node is done when it ran and its last step had no error; failed when its last step erred or its
policy raised; skipped when a dependency did not finish or the environment had already ended. Tool calls
run through runner.apply_action, so replay_record replays a workflow episode exactly (the generator's and
the system steps change nothing).

The header's "workflow" holds the graph, per-node outcomes (status, steps, env reward, score delta) and
per-role totals, from which `role_rewards` computes the hierarchical per-role rewards.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from environments.core import Action, Env, Policy, ToolSpec, chain_hash, tool_schema_hash
from environments.records import Header, Record, Step, header_composite
from environments.roles import ROLE_NAME
from environments.runner import apply_action, env_end_reason, opening_step
from environments.trajectory import make_step, new_record

WORKFLOW_FORMAT = "practicum.workflow/1"
GENERATOR = "generator"
MAX_NODES = 16
MAX_NODE_STEPS = 50
DEFAULT_NODE_STEPS = 8
MAX_INSTRUCTION = 1000
_NODE_KEYS = {"id", "role", "instruction", "depends_on", "max_steps"}


class WorkflowError(ValueError):
    """A workflow that cannot run; the message names the node and the field."""


@dataclass(frozen=True)
class WorkflowNode:
    id: str
    role: str
    instruction: str
    depends_on: tuple[str, ...] = ()
    max_steps: int = DEFAULT_NODE_STEPS

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "instruction": self.instruction,
            "depends_on": list(self.depends_on),
            "max_steps": self.max_steps,
        }


@dataclass(frozen=True)
class Workflow:
    nodes: tuple[WorkflowNode, ...]

    def to_json(self) -> dict[str, Any]:
        return {"format": WORKFLOW_FORMAT, "nodes": [n.to_json() for n in self.nodes]}


def workflow_parse(data: Any, *, roles: Collection[str]) -> Workflow:
    """A checked Workflow from JSON text or its parsed object; raises WorkflowError naming the node and field."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise WorkflowError(f"workflow: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise WorkflowError(f"workflow: expected an object, got {type(data).__name__}")
    if data.get("format") != WORKFLOW_FORMAT:
        raise WorkflowError(f"workflow.format: expected {WORKFLOW_FORMAT!r}, got {data.get('format')!r}")
    if extra := sorted(set(data) - {"format", "nodes"}):
        raise WorkflowError(f"workflow: unexpected field(s) {', '.join(map(str, extra))}")
    raw = data.get("nodes")
    if not isinstance(raw, list) or not raw:
        raise WorkflowError("workflow.nodes: expected a non-empty list of nodes")
    if len(raw) > MAX_NODES:
        raise WorkflowError(f"workflow.nodes: at most {MAX_NODES} nodes, got {len(raw)}")
    nodes = [_node(item, i, roles) for i, item in enumerate(raw)]
    ids = [n.id for n in nodes]
    for node in nodes:
        if ids.count(node.id) > 1:
            raise WorkflowError(f"node {node.id!r}.id: declared {ids.count(node.id)} times")
        for dep in node.depends_on:
            if dep not in ids:
                raise WorkflowError(f"node {node.id!r}.depends_on: {dep!r} is not a node of this workflow")
            if dep == node.id:
                raise WorkflowError(f"node {node.id!r}.depends_on: a node cannot depend on itself")
    workflow = Workflow(nodes=tuple(nodes))
    topological_order(workflow)  # refuses cycles
    return workflow


def _node(item: Any, i: int, roles: Collection[str]) -> WorkflowNode:
    where = f"workflow.nodes[{i}]"
    if not isinstance(item, dict):
        raise WorkflowError(f"{where}: expected an object, got {type(item).__name__}")
    node_id = item.get("id")
    if not isinstance(node_id, str) or not ROLE_NAME.fullmatch(node_id):
        raise WorkflowError(f"{where}.id: {node_id!r} is not an id (lowercase letters, digits, - or _, at most 32)")
    where = f"node {node_id!r}"
    if extra := sorted(set(item) - _NODE_KEYS):
        raise WorkflowError(f"{where}: unexpected field(s) {', '.join(map(str, extra))}")
    role = item.get("role")
    if role not in roles:
        raise WorkflowError(f"{where}.role: {role!r} is not a role of the team ({', '.join(sorted(roles))})")
    instruction = item.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip() or len(instruction) > MAX_INSTRUCTION:
        raise WorkflowError(f"{where}.instruction: expected text of 1 to {MAX_INSTRUCTION} characters")
    depends_on = item.get("depends_on", [])
    if not isinstance(depends_on, list) or not all(isinstance(d, str) for d in depends_on):
        raise WorkflowError(f"{where}.depends_on: expected a list of node ids, got {depends_on!r}"[:200])
    max_steps = item.get("max_steps", DEFAULT_NODE_STEPS)
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= MAX_NODE_STEPS:
        raise WorkflowError(f"{where}.max_steps: expected a whole number from 1 to {MAX_NODE_STEPS}, got {max_steps!r}")
    return WorkflowNode(
        id=node_id, role=str(role), instruction=instruction, depends_on=tuple(dict.fromkeys(depends_on)), max_steps=max_steps
    )


def topological_order(workflow: Workflow) -> list[WorkflowNode]:
    """Nodes with every dependency first; among ready nodes, declaration order. Raises WorkflowError on a cycle."""
    done: set[str] = set()
    order: list[WorkflowNode] = []
    pending = list(workflow.nodes)
    while pending:
        ready = next((n for n in pending if set(n.depends_on) <= done), None)
        if ready is None:
            raise WorkflowError(f"workflow.nodes: a cycle among {', '.join(repr(n.id) for n in pending)}")
        order.append(ready)
        done.add(ready.id)
        pending.remove(ready)
    return order


class ScriptedGenerator(Policy):
    """A generator stand-in: writes a fixed workflow (a dict in the format above) as its message."""

    name = "scripted-generator"

    def __init__(self, workflow: Mapping[str, Any]) -> None:
        self.workflow = dict(workflow)

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return Action(message=json.dumps(self.workflow, sort_keys=True))


def linear_plan(*steps: tuple[str, str, str], max_steps: int = DEFAULT_NODE_STEPS) -> dict[str, Any]:
    """A rule-made workflow: (id, role, instruction) nodes, each depending on the one before."""
    nodes = [
        {"id": i, "role": r, "instruction": text, "depends_on": [steps[k - 1][0]] if k else [], "max_steps": max_steps}
        for k, (i, r, text) in enumerate(steps)
    ]
    return {"format": WORKFLOW_FORMAT, "nodes": nodes}


def run_workflow(env: Env, generator: Policy, team: Mapping[str, Policy], *, sink: Any = None, source: str = "rollout") -> Record:
    """Play one workflow episode (env already reset); return its record. See the module docstring."""
    assert GENERATOR not in team, f"{GENERATOR!r} is the generator's role, not a builder's"
    tools = env.tools()
    roles = {GENERATOR: generator, **team}
    header: Header = {
        **env.header(),
        "policy": {"name": "workflow", "kind": "team"},
        "harness": {},
        "source": source,
        "parent": None,
        "tools": [t.openai_schema() for t in tools],
        "tool_schema_hash": tool_schema_hash(tools),
        "team": {name: {"policy": p.describe()} for name, p in roles.items()},  # the runner's shape: role -> {"policy", ...}
    }
    if hasattr(sink, "on_start"):
        sink.on_start(header)
    steps = [opening_step(env)]
    chain = steps[0]["state_hash"]
    assert chain is not None, "opening_step hashes the root of the chain"

    def emit(step: Step) -> None:
        steps.append(step)
        if sink is not None:
            sink.on_step(step)

    if sink is not None:
        sink.on_step(steps[0])
    outcome: dict[str, Any] = {"format": WORKFLOW_FORMAT, "graph": None, "nodes": [], "roles": {}}
    reason: str | None = None
    try:
        action = generator.act(steps, tools)
    except Exception as exc:  # a generator bug ends the episode as agent_error, recorded
        action = Action(message=None, error=f"{type(exc).__name__}: {exc}"[:500])
    chain = chain_hash(chain, env.state_hash())
    plan_step = make_step(
        index=len(steps),
        source="agent",
        message=action.message,
        reasoning=action.reasoning,
        state_hash=chain,
        role=GENERATOR,
        token_ids=action.token_ids,
        logprobs=action.logprobs,
        prompt_token_ids=action.prompt_token_ids,
    )
    try:
        if action.error:
            raise WorkflowError(f"generator: {action.error}")
        workflow = workflow_parse(action.message or "", roles=set(team))
    except WorkflowError as exc:
        plan_step["meta"] = {"workflow_error": str(exc)}
        emit(plan_step)
        header["termination_cause"] = {"type": "WorkflowError", "message": str(exc)}
        reason = "agent_error"
    else:
        emit(plan_step)
        outcome["graph"] = workflow.to_json()
        chain, reason = _execute(env, workflow, team, tools, steps, chain, emit, outcome["nodes"])
    outcome["roles"] = _role_totals(outcome["nodes"], valid=outcome["graph"] is not None)
    score = env.score()
    header.update(
        {
            "termination_reason": reason,
            "score": score.to_dict(),
            "reward": score.composite,
            "workflow": outcome,
            "roles": _accounting(steps),
        }
    )
    record = new_record(header=header, steps=steps)
    if hasattr(sink, "on_finish"):
        sink.on_finish(record)
    return record


def _execute(
    env: Env,
    workflow: Workflow,
    team: Mapping[str, Policy],
    tools: list[ToolSpec],
    steps: list[Step],
    chain: str,
    emit: Any,
    outcomes: list[dict[str, Any]],
) -> tuple[str, str]:
    status: dict[str, str] = {}
    agent_steps, limit = 0, env.max_steps
    for node in topological_order(workflow):
        out: dict[str, Any] = {"id": node.id, "role": node.role, "status": "skipped", "steps": 0, "reward": 0.0, "score_delta": 0.0}
        outcomes.append(out)
        if env.done or agent_steps >= limit or any(status.get(d) != "done" for d in node.depends_on):
            status[node.id] = "skipped"
            continue
        chain = chain_hash(chain, env.state_hash())
        emit(
            make_step(
                index=len(steps),
                source="system",
                message=f"[{node.role}] {node.instruction}",
                state_hash=chain,
                role=node.role,
                meta={"workflow_node": node.id, "instruction": True},
            )
        )
        before, failed, ran = env.score().composite, False, 0
        while ran < node.max_steps and not env.done and agent_steps < limit:
            started = time.perf_counter()
            try:
                action = team[node.role].act(steps, tools)
            except Exception as exc:  # the node fails; the workflow goes on with what does not depend on it
                steps[-1].setdefault("meta", {})["policy_exception"] = f"{type(exc).__name__}: {exc}"[:500]
                failed = True
                break
            step, chain, failed = apply_action(env, action, index=len(steps), chain=chain)
            step.update({"role": step.get("role") or node.role, "latency_ms": round((time.perf_counter() - started) * 1000, 3)})
            step["meta"]["workflow_node"] = node.id
            emit(step)
            ran, agent_steps = ran + 1, agent_steps + 1
            out["reward"] = round(out["reward"] + step["reward"], 9)
            if action.stop:
                break
        out.update(steps=ran, status="done" if ran and not failed else "failed", score_delta=round(env.score().composite - before, 9))
        status[node.id] = out["status"]
    reason = env_end_reason(env) or ("max_steps" if agent_steps >= limit else "agent_stop")  # the plan ran out: the team stopped
    return chain, reason


def _role_totals(nodes: list[dict[str, Any]], *, valid: bool) -> dict[str, dict[str, Any]]:
    totals: dict[str, dict[str, Any]] = {GENERATOR: {"nodes": len(nodes), "valid": valid, **_counts(nodes)}}
    for node in nodes:
        role = totals.setdefault(node["role"], {"nodes": 0, "done": 0, "failed": 0, "skipped": 0, "steps": 0, "reward": 0.0})
        role["nodes"] += 1
        role[node["status"]] += 1
        role["steps"] += node["steps"]
        role["reward"] = round(role["reward"] + node["reward"], 9)
    return totals


def _counts(nodes: list[dict[str, Any]]) -> dict[str, int]:
    return {s: sum(1 for n in nodes if n["status"] == s) for s in ("done", "failed", "skipped")}


def _accounting(steps: list[Step]) -> dict[str, dict[str, Any]]:
    """Per-role turns and sampled tokens, as the record header's "roles" keeps them (instruction steps are not turns)."""
    out: dict[str, dict[str, Any]] = {}
    for step in steps:
        if step["source"] == "env" or step.get("meta", {}).get("instruction"):
            continue
        entry = out.setdefault(step.get("role") or "actor", {"turns": 0, "tokens": 0, "cost": 0.0})
        entry["turns"] += 1
        entry["tokens"] += len(step.get("token_ids") or [])
    return out


def role_rewards(record: Record) -> dict[str, float]:
    """Hierarchical per-role rewards from a workflow record: each role earns the episode's final composite times
    the share of its own nodes that finished ("done"); the generator earns it times the share of all nodes
    that finished, and 0 for a plan that did not validate. A role with a skipped node shares the blame for
    the plan's failure only through its share, so credit follows who did (or could not do) the work."""
    header = record["header"]
    composite = float(header_composite(header, 0.0))
    workflow = header.get("workflow") or {}
    out: dict[str, float] = {}
    for role, totals in (workflow.get("roles") or {}).items():
        share = totals["done"] / totals["nodes"] if totals["nodes"] else 0.0
        if role == GENERATOR and not totals.get("valid"):
            share = 0.0
        out[role] = round(composite * share, 9)
    return out
