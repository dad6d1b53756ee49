"""Branching an episode at a step, and verifying a correction by replay.

    child = branch_run(record, step_index=k, first_action=action, policy=policy)       # a new record, source=branch
    outcome = verify_correction(record, step_index=k, correction={"name": ..., "arguments": {...}},
                                policy_factory=factory, continuation_seed=0)

A branch rebuilds the environment from the record's seed and its steps before k (the runner replays them and
checks the state-hash chain, so a child's prefix chain equals the parent's), applies `first_action` as step k,
and lets `policy` play on to the end. The parent record is read, never changed.

Verification runs two branches from the same point with the same policy and the same continuation seed: one
applies the correction, the other retries the original action (so policy noise and the policy's restart
from mid-episode affect both alike). The correction is verified when its branch beats the retry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from environments.core import Action, Env, EnvError, Policy, ToolCall, ToolSpec
from environments.diagnosis.taxonomy import AGENT_SOURCES
from environments.records import Record, Step, header_score
from environments.replay import env_for_header
from environments.runner import run_episode

PolicyFactory = Callable[[Env, int], Policy]
SinkFactory = Callable[[str, list[Step]], Any]  # (label, prefix steps) -> a runner sink, or None


class FirstActionThen(Policy):
    """Plays a fixed action once, then hands every later decision to `then` (which sees the full history)."""

    def __init__(self, first: Action, then: Policy) -> None:
        self.first = first
        self.then = then
        self.name = then.name
        self.kind = then.kind
        self._used = False

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        if not self._used:
            self._used = True
            return self.first
        return self.then.act(history, tools)

    def describe(self) -> dict[str, Any]:
        return self.then.describe()


def env_for_record(record: Record) -> Env:
    return env_for_header(record["header"])


def check_branch_step(record: Record, step_index: int) -> Step:
    """The step a branch replaces; raises EnvError when `step_index` is not an agent decision of the record."""
    steps = record["steps"]
    if not isinstance(step_index, int) or isinstance(step_index, bool) or not 1 <= step_index < len(steps):
        raise EnvError("invalid_step", f"step {step_index!r} is not a step of this episode (it has steps 0..{len(steps) - 1})")
    step = steps[step_index]
    if step.get("source") not in AGENT_SOURCES:
        raise EnvError("invalid_step", f"step {step_index} is a {step.get('source')} step, not an agent decision")
    return step


def action_from_step(record: Record, step_index: int) -> Action:
    """The action a recorded step took, rebuilt so that re-applying it reproduces the step."""
    step = check_branch_step(record, step_index)
    # arguments that were a string (JSON that did not parse) go back as recorded, as replay does
    calls = [
        ToolCall(name=c["name"], arguments=cast(dict[str, Any], c["arguments"]), id=c.get("id", "")) for c in step.get("tool_calls") or []
    ]
    meta = step.get("meta") or {}
    is_last = step_index == len(record["steps"]) - 1
    stopped = is_last and record["header"].get("termination_reason") == "agent_stop"
    return Action(tool_calls=calls, message=step.get("message"), error=meta.get("invalid_action"), stop=stopped)


def correction_action(correction: dict[str, Any]) -> Action:
    assert isinstance(correction, dict) and isinstance(correction.get("name"), str), f"a correction is a tool call, got {correction!r}"
    return Action(tool_calls=[ToolCall(name=correction["name"], arguments=dict(correction.get("arguments") or {}))])


def branch_run(
    record: Record,
    *,
    step_index: int,
    first_action: Action,
    policy: Policy,
    env: Env | None = None,
    sink: Any = None,
    parent_ref: dict[str, Any] | None = None,
    max_steps: int | None = None,
) -> Record:
    """Replay steps [0, k), apply `first_action` as step k, let `policy` continue; the child record."""
    check_branch_step(record, step_index)
    env = env if env is not None else env_for_record(record)
    header = record["header"]
    limit = max_steps if max_steps is not None else (header.get("harness") or {}).get("max_steps")
    return run_episode(
        env,
        FirstActionThen(first_action, policy),
        sink=sink,
        start_history=record["steps"][:step_index],
        source="branch",
        harness=header.get("harness"),
        parent=parent_ref or {"episode_id": None, "branch_step": step_index},
        max_steps=limit,
    )


@dataclass
class BranchOutcome:
    record: Record
    composite: float
    passed: bool
    termination_reason: str | None

    @classmethod
    def of(cls, record: Record) -> BranchOutcome:
        header = record["header"]
        score = header_score(header)
        return cls(record, float(score.get("composite", 0.0)), bool(score.get("passed", False)), header.get("termination_reason"))

    def summary(self) -> dict[str, Any]:
        return {
            "composite": self.composite,
            "passed": self.passed,
            "termination_reason": self.termination_reason,
            "steps": len(self.record["steps"]),
        }


@dataclass
class VerificationOutcome:
    step_index: int
    continuation_seed: int
    corrected: BranchOutcome
    retry: BranchOutcome

    @property
    def verified(self) -> bool:
        """The correction beats the retry: it passes where the retry fails, or both agree on passing and it scores higher."""
        c, r = self.corrected, self.retry
        if c.passed != r.passed:
            return c.passed
        return c.composite > r.composite + 1e-9

    def as_json(self) -> dict[str, Any]:
        return {
            "step_index": self.step_index,
            "continuation_seed": self.continuation_seed,
            "corrected": self.corrected.summary(),
            "retry": self.retry.summary(),
            "delta_composite": round(self.corrected.composite - self.retry.composite, 9),
            "verified": self.verified,
        }


def verify_correction(
    record: Record,
    *,
    step_index: int,
    correction: dict[str, Any],
    policy_factory: PolicyFactory,
    continuation_seed: int,
    sink_factory: SinkFactory | None = None,
    parent_ref: dict[str, Any] | None = None,
) -> VerificationOutcome:
    """Run the corrected branch and the original-action retry (see the module docstring)."""
    check_branch_step(record, step_index)
    prefix = record["steps"][:step_index]
    outcomes: dict[str, BranchOutcome] = {}
    for label, action in (("corrected", correction_action(correction)), ("retry", action_from_step(record, step_index))):
        env = env_for_record(record)
        sink = sink_factory(label, prefix) if sink_factory else None
        child = branch_run(
            record,
            step_index=step_index,
            first_action=action,
            policy=policy_factory(env, continuation_seed),
            env=env,
            sink=sink,
            parent_ref=parent_ref,
        )
        outcomes[label] = BranchOutcome.of(child)
    return VerificationOutcome(step_index, continuation_seed, outcomes["corrected"], outcomes["retry"])
