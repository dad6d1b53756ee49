"""rule-critic: a scripted critic for any environment, so teams can be tested without a model.

    make_policy("rule-critic", env, seed)      # registered for every environment (environments.policies)

It reads the actor's steps only and writes one piece of advice (Action.message), checking in this order:
the last actor step's failing call (its error), the same call repeated (three times in a row), and tools the
actor has not used yet. Its action also says stop, which a team's runner ignores for a critic: run as an
actor by mistake, it ends the episode at once instead of talking until the step cap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from environments.core import Action, Policy, ToolSpec
from environments.records import Step, ToolCallDict
from environments.roles import ACTOR, is_runner_call, step_role

REPEATS = 3  # this many identical calls in a row read as a loop


def actor_steps(history: list[Step]) -> list[Step]:
    return [s for s in history if s.get("source") != "env" and step_role(s) == ACTOR]


def env_calls(step: Step) -> list[ToolCallDict]:
    return [c for c in step.get("tool_calls") or [] if not is_runner_call(c)]


def call_key(call: Mapping[str, Any]) -> str:
    return f"{call.get('name')}:{json.dumps(call.get('arguments'), sort_keys=True, default=str)}"


def unused_tools(history: list[Step], tools: list[ToolSpec]) -> list[str]:
    """The tools the actor has not called yet, in declaration order."""
    used = {c.get("name") for s in actor_steps(history) for c in env_calls(s)}
    return [t.name for t in tools if t.name not in used]


class RuleCritic(Policy):
    name = "rule-critic"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return Action(message=advice(history, tools), stop=True)


def failure_advice(step: Step) -> str | None:
    """Advice on the step's first failing call (its error), or None when no call failed."""
    failed = [r for r in step.get("results") or [] if r.get("is_error")]
    if not failed:
        return None
    call = next((c for c in step.get("tool_calls") or [] if c.get("id") == failed[0].get("call_id")), None)
    what = f"Your call {call['name']}({json.dumps(call.get('arguments'), default=str)[:120]})" if call else "Your last action"
    error = failed[0].get("content")
    error = error.get("error", error) if isinstance(error, dict) else error
    return f"{what} failed: {str(error)[:200]}. Check the arguments against the tool's schema before retrying."


def advice(history: list[Step], tools: list[ToolSpec]) -> str:
    steps = actor_steps(history)
    if not steps:
        return "Start by reading the state you are responsible for before changing anything."
    failed = failure_advice(steps[-1])
    if failed:
        return failed
    recent = [";".join(call_key(c) for c in env_calls(s)) for s in steps[-REPEATS:]]
    if len(recent) == REPEATS and len(set(recent)) == 1 and recent[0]:
        return f"You made the same call {REPEATS} times in a row ({recent[0][:120]}); it is not changing anything, try another approach."
    unused = unused_tools(history, tools)
    if unused:
        return (
            f"You have not used {', '.join(unused[:5])}{' and more' if len(unused) > 5 else ''}; one of them may show what you are missing."
        )
    return "No problem spotted: keep going, and check the result of each change."
