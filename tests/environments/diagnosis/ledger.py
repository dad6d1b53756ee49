"""A tiny deterministic environment for diagnosis tests, with read/write events and a crafted failure.

Task: make `a` equal the target (3 on even seeds, 4 on odd ones), then `submit`. Tools: add(key, amount),
read(key), submit(). "ledger/tight" allows 3 calls, "ledger/loose" 4; running out ends with max_steps.

Policies: "ledger-stubborn" adds to the wrong key first (its mistake), then reads a, then submits, deciding
from the history alone; "ledger-fixer" (the anchor) reads a when it does not know it, adds what is missing,
and submits. Importing this module registers both tasks and both policies.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import re
from typing import Any

from environments.core import Action, Env, Event, Observation, Policy, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.meta import EnvMeta, ScoreComponent
from environments.policies import register_policy
from environments.registry import register, register_env

_KEY = {"type": "string", "enum": ["a", "b"]}
TOOLS = [
    ToolSpec(
        "add",
        "Add an amount to a key.",
        {
            "type": "object",
            "properties": {"key": _KEY, "amount": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["key", "amount"],
            "additionalProperties": False,
        },
    ),
    ToolSpec("read", "Read a key.", {"type": "object", "properties": {"key": _KEY}, "required": ["key"], "additionalProperties": False}),
    ToolSpec("submit", "Submit; ends the episode.", {"type": "object", "properties": {}, "additionalProperties": False}),
]


class LedgerEnv(Env):
    name = "ledger"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int) -> None:
        super().__init__(task, seed)
        self.reset()

    def reset(self) -> Observation:
        self.state: dict[str, Any] = {"a": 0, "b": 0, "calls": 0, "submitted": False, "reason": None, "target": 3 + self.seed % 2}
        return Observation(text=f"Make a equal {self.state['target']}, then submit.")

    def tools(self) -> list[ToolSpec]:
        return TOOLS

    def step(self, call: ToolCall) -> StepResult:
        s = self.state
        if self.done:
            return StepResult(content={"error": "the episode is over"}, is_error=True, done=True)
        s["calls"] += 1
        result = self._apply(call)
        if s["reason"] is None and s["calls"] >= int(self.task.spec["max_calls"]):
            s["reason"] = "max_steps"
        result.done = self.done
        result.termination_reason = s["reason"]
        return result

    def _apply(self, call: ToolCall) -> StepResult:
        s, spec = self.state, self.tool(call.name)
        if spec is None:
            return StepResult(content={"error": f"unknown tool {call.name!r}"}, is_error=True)
        problem = validate_arguments(spec.parameters, call.arguments)
        if problem:
            return StepResult(content={"error": problem}, is_error=True)
        if call.name == "add":
            key, before = call.arguments["key"], s[call.arguments["key"]]
            s[key] = before + call.arguments["amount"]
            return StepResult(content={"key": key, "value": s[key]}, events=[Event(f"value:{key}", "amount", before, s[key])])
        if call.name == "read":
            key = call.arguments["key"]
            return StepResult(content={"key": key, "value": s[key]}, events=[Event(f"value:{key}", "*", op="read")])
        s["submitted"], s["reason"] = True, "agent_stop"
        return StepResult(content={"ok": True}, events=[Event("values:*", "*", op="read"), Event("ledger", "submitted", False, True)])

    def score(self) -> Score:
        passed = bool(self.state["submitted"] and self.state["a"] == self.state["target"])
        return Score(
            composite=1.0 if passed else 0.0, passed=passed, components={"right": float(passed)}, termination_reason=self.state["reason"]
        )

    def snapshot(self) -> bytes:
        return pickle.dumps(self.state)

    def restore(self, blob: bytes) -> None:
        self.state = pickle.loads(blob)

    def state_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.state, sort_keys=True).encode()).hexdigest()[:32]

    @property
    def done(self) -> bool:
        return self.state["reason"] is not None

    @property
    def termination_reason(self) -> str | None:
        return self.state["reason"]


def _target(history: list[dict[str, Any]]) -> int:
    match = re.search(r"equal (\d+)", str(history[0].get("message") or ""))
    return int(match.group(1)) if match else 3


class Stubborn(Policy):
    name = "ledger-stubborn"

    def __init__(self, env: Env, seed: int) -> None:
        self.seed = seed

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        done = sum(1 for s in history if s["source"] == "agent")
        if done == 0:
            return Action(tool_calls=[ToolCall("add", {"key": "b", "amount": _target(history)})])
        if done == 1:
            return Action(tool_calls=[ToolCall("read", {"key": "a"})])
        return Action(tool_calls=[ToolCall("submit", {})])


class Fixer(Policy):
    name = "ledger-fixer"

    def __init__(self, env: Env, seed: int) -> None:
        self.seed = seed

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        known = None
        for step in history:
            for result in step.get("results") or []:
                content = result.get("content")
                if isinstance(content, dict) and content.get("key") == "a":
                    known = content["value"]
        target = _target(history)
        if known is None:
            return Action(tool_calls=[ToolCall("read", {"key": "a"})])
        if known < target:
            return Action(tool_calls=[ToolCall("add", {"key": "a", "amount": target - known})])
        return Action(tool_calls=[ToolCall("submit", {})])


TIGHT = TaskSpec(
    env="ledger",
    key="tight",
    split="train",
    description="Make a equal the target within 3 calls.",
    pass_threshold=1.0,
    spec={"max_calls": 3},
)
LOOSE = TaskSpec(
    env="ledger",
    key="loose",
    split="train",
    description="Make a equal the target within 4 calls.",
    pass_threshold=1.0,
    spec={"max_calls": 4},
)
for _task in (TIGHT, LOOSE):
    register(_task, LedgerEnv)
register_env(
    EnvMeta(
        env="ledger",
        score_components={"right": ScoreComponent("1 when a equals the target at submit", moved_by=("add", "submit"))},
    )
)
register_policy("ledger", Stubborn.name, Stubborn)
register_policy("ledger", Fixer.name, Fixer)
