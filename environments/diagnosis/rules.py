"""Rule diagnoses: the pivotal step, where an anchor policy's choice differs from the agent's and matters.

    answer = rule_diagnose(record, anchor_factory=factory, seeds=(0,))
    answer.proposal or answer.error

The rule finds the pivotal step k (pivotal.py: the anchor taking over before k passes, after k it cannot),
asks the anchor what it would do from k given the same history, and proposes its first call that changes the
world (a read would change nothing) as the correction.
The category follows from how the agent's action at k differs: an invalid or failing call, a repeat of a
recent call, stopping, the anchor's tool with other arguments, or a different tool (a planning error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from environments.core import ToolCall
from environments.diagnosis.branching import env_for_record
from environments.diagnosis.model_diagnoser import DiagnosisProposal, ModelAnswer
from environments.diagnosis.pivotal import AnchorFactory, find_pivotal_step
from environments.records import Record, ToolCallDict, ToolResultDict
from environments.replay import replay_prefix
from environments.trajectory import make_step


def _call_key(call: Mapping[str, Any]) -> str:
    return json.dumps([call.get("name"), call.get("arguments")], sort_keys=True, default=str)


def categorize(record: Record, step_index: int, anchor_call: dict[str, Any]) -> str:
    """The taxonomy category of the agent's action at `step_index` when the anchor would have made `anchor_call`."""
    steps = record["steps"]
    step = steps[step_index]
    calls = step.get("tool_calls") or []
    results = step.get("results") or []
    if (step.get("meta") or {}).get("invalid_action") or any(r.get("is_error") for r in results):
        unknown = any("unknown tool" in json.dumps(r.get("content"), default=str) for r in results)
        return "wrong_tool" if unknown else "wrong_arguments"
    if not calls:
        return "premature_end" if step_index == len(steps) - 1 else "planning_error"
    recent = {_call_key(c) for s in steps[max(1, step_index - 3) : step_index] for c in s.get("tool_calls") or []}
    if any(_call_key(c) in recent for c in calls):
        return "loop_repetition"
    if step_index == len(steps) - 1 and record["header"].get("termination_reason") == "agent_stop":
        return "premature_end"
    if any(c.get("name") == anchor_call["name"] for c in calls):
        return "wrong_arguments"
    return "planning_error"


_LOOKAHEAD = 40  # anchor actions tried from step k before giving up on finding one that changes the world


def first_state_changing_call(record: Record, k: int, *, anchor_factory: AnchorFactory, seed: int) -> dict[str, Any] | None:
    """The anchor's first call from step k that changes the world (a write event, no error).

    Anchors often open a day by reading (news, inventory); proposing a read as the correction would change
    nothing, so the anchor plays on in a scratch copy of the world until it makes a call that writes.
    """
    env = env_for_record(record)
    history = [step.copy() for step in record["steps"][:k]]
    replay_prefix(env, history)
    anchor = anchor_factory(env, seed)
    tools = env.tools()
    for _ in range(_LOOKAHEAD):
        if env.done:
            return None
        action = anchor.act(history, tools)
        if not action.tool_calls:
            return None
        calls: list[ToolCallDict] = []
        results: list[ToolResultDict] = []
        for i, call in enumerate(action.tool_calls):
            result = env.step(ToolCall(name=call.name, arguments=dict(call.arguments), id=call.id or f"look_{len(history)}_{i}"))
            if not result.is_error and any(event.op == "write" for event in result.events):
                return {"name": call.name, "arguments": dict(call.arguments)}
            calls.append({"id": call.id or f"look_{len(history)}_{i}", "name": call.name, "arguments": dict(call.arguments)})
            results.append({"call_id": calls[-1]["id"], "content": result.content, "is_error": result.is_error})
        history.append(make_step(index=len(history), tool_calls=calls, results=results))
    return None


def rule_diagnose(record: Record, *, anchor_factory: AnchorFactory, seeds: tuple[int, ...] = (0,), search: str = "binary") -> ModelAnswer:
    """A diagnosis at the pivotal step with the anchor's choice as the correction, or an error saying why none."""
    pivotal = find_pivotal_step(record, anchor_factory=anchor_factory, seeds=seeds, search=search)
    raw = {"pivotal": pivotal.as_json()}
    if pivotal.step is None:
        return ModelAnswer(None, f"no pivotal step: {pivotal.reason}", raw)
    k = pivotal.step
    anchor_call = first_state_changing_call(record, k, anchor_factory=anchor_factory, seed=seeds[0])
    if anchor_call is None:
        return ModelAnswer(None, f"the anchor changes nothing in its first {_LOOKAHEAD} actions from step {k}", raw)
    if [_call_key(anchor_call)] == [_call_key(c) for c in record["steps"][k].get("tool_calls") or []]:
        return ModelAnswer(None, f"the anchor would make the same call at pivotal step {k}", raw)
    before = pivotal.checks[k]["composites"]
    after = pivotal.checks[min(c for c in pivotal.checks if c > k)]["composites"]
    taken = (
        ", ".join(f"{c['name']}({json.dumps(c.get('arguments'), default=str)})" for c in record["steps"][k].get("tool_calls") or [])
        or "no call"
    )
    explanation = (
        f"Taking over before step {k}, {pivotal.anchor} passes (composite {before}); after step {k} it cannot (composite {after}). "
        f"At step {k} the agent made {taken}; {pivotal.anchor} would call {anchor_call['name']}({json.dumps(anchor_call['arguments'], default=str)})."
    )
    proposal = DiagnosisProposal(
        step_index=k, category=categorize(record, k, anchor_call), explanation=explanation, correction=anchor_call, evidence_steps=[k]
    )
    return ModelAnswer(proposal, None, raw)
