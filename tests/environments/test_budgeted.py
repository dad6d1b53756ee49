"""The budgeted-step contract (environments.budgeted), on two tiny environments: one per flavour."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from environments.budgeted import AuditedEnv, CallLedger, StepLedger, WorldEnv, knobs_from_spec
from environments.core import EnvError, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec

_TOOLS = [
    ToolSpec("add", "Add n to the total.", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    ToolSpec("stop", "End the episode.", {"type": "object", "properties": {}}),
]
TASK = TaskSpec(env="counter", key="count", split="dev", description="count to something")


@dataclass
class Tally(CallLedger):
    total: int = 0


class CounterWorld(WorldEnv):
    """Adds numbers; the composite is the total over 10 once finished. Three calls in all."""

    name = "counter"
    world: Tally

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.max_calls, self.world = 3, Tally()

    def reset(self) -> Observation:
        self.world = Tally()
        return Observation(text="count")

    def tools(self) -> list[ToolSpec]:
        return list(_TOOLS)

    def _run(self, call: ToolCall) -> StepResult:
        if call.name == "stop":
            self.world.end("agent_stop")
            return StepResult(content={"ok": True})
        self.world.total += call.arguments["n"]
        return StepResult(content={"total": self.world.total})

    def score(self) -> Score:
        value = min(1.0, self.world.total / 10) if self.world.finished else 0.0
        return Score(value, value >= 0.5, termination_reason=self.world.reason)

    def state_hash(self) -> str:
        return f"{self.world.total}/{self.world.calls}"


@dataclass
class Audit(StepLedger):
    total: int = 0
    seen: list[int] = field(default_factory=list)


class CounterAudit(AuditedEnv):
    name = "counter-audit"
    _state: Audit

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.max_calls, self._state = 3, Audit()

    def reset(self) -> Observation:
        self._state = Audit()
        return Observation(text="count")

    def tools(self) -> list[ToolSpec]:
        return list(_TOOLS)

    def _run(self, call: ToolCall) -> StepResult:
        if call.name == "stop":
            self._state.end("agent_stop")
            return StepResult(content={"ok": True})
        if call.arguments["n"] < 0:
            return self._refuse("negative", f"n: {call.arguments['n']} is below 0")
        self._state.total += call.arguments["n"]
        return StepResult(content={"total": self._state.total})

    def score(self) -> Score:
        return Score(min(1.0, self._state.total / 10), False, termination_reason=self._state.termination_reason)

    def _fixed_state(self) -> dict[str, Any]:
        return {"seed": self.seed}


def test_every_call_counts_errors_included_and_the_call_at_the_cap_ends_as_max_steps_with_the_composite() -> None:
    env = CounterWorld(TASK, 0)
    env.reset()
    assert env.step(ToolCall("nope", {})).content == {"error": "unknown tool 'nope'; tools: ['add', 'stop']"}
    assert env.step(ToolCall("add", {"n": "4"})).content == {"error": 'arguments.n: expected a number, got "4"'}
    assert not env.done and env.termination_reason is None and env.max_steps == 3
    last = env.step(ToolCall("add", {"n": 6}))
    assert (last.done, last.termination_reason, last.reward, env.termination_reason) == (True, "max_steps", 0.6, "max_steps")
    after = env.step(ToolCall("add", {"n": 1}))
    assert (after.content, after.is_error, after.done, after.termination_reason) == (
        {"error": "the episode is over"},
        True,
        True,
        "max_steps",
    )
    assert env.world.total == 6 and env.world.calls == 3  # the refused call changed nothing


def test_the_tool_that_ends_the_episode_gets_done_its_reason_and_the_composite() -> None:
    env = CounterWorld(TASK, 0)
    env.reset()
    assert env.step(ToolCall("add", {"n": 8})).reward == 0.0
    end = env.step(ToolCall("stop", {}))
    assert (end.done, end.termination_reason, end.reward, env.score().composite) == (True, "agent_stop", 0.8, 0.8)


def test_a_world_snapshot_restores_the_budget_with_the_world() -> None:
    env = CounterWorld(TASK, 0)
    env.reset()
    env.step(ToolCall("add", {"n": 2}))
    blob = env.snapshot()
    env.step(ToolCall("stop", {}))
    env.restore(blob)
    assert (env.world.total, env.world.calls, env.done) == (2, 1, False)


def test_an_audited_env_logs_each_refusal_in_its_trail_in_the_coded_shape() -> None:
    env = CounterAudit(TASK, 5)
    env.reset()
    assert env.step(ToolCall("nope", {})).content == {"error": "unknown_tool", "message": "no tool named 'nope'; tools are add, stop"}
    assert env.step(ToolCall("add", {"n": -1})).content == {"error": "negative", "message": "n: -1 is below 0"}
    assert env._state.errors == 2 and env._state.trail == [
        {"step": 1, "tool": "nope", "error": "unknown_tool"},
        {"step": 2, "tool": "add", "error": "negative"},
    ]
    last = env.step(ToolCall("add", {"n": 3}))
    assert (last.done, last.termination_reason, last.reward) == (True, "max_steps", 0.3)
    after = env.step(ToolCall("stop", {}))
    assert after.content == {"error": "episode_over", "message": "the episode is over; no further calls are taken"} and after.done


def test_an_audited_snapshot_is_tied_to_its_task_and_seed_and_the_hash_covers_the_fixed_state() -> None:
    env = CounterAudit(TASK, 5)
    env.reset()
    env.step(ToolCall("add", {"n": 3}))
    blob, digest = env.snapshot(), env.state_hash()
    other = CounterAudit(TASK, 5)
    other.restore(blob)
    assert other.state_hash() == digest and other._state.total == 3 and isinstance(other._state, Audit)
    assert CounterAudit(TASK, 6).state_hash() != CounterAudit(TASK, 5).state_hash()  # same state, another seed
    with pytest.raises(EnvError, match="snapshot of counter/count seed 5, not counter/count seed 6"):
        CounterAudit(TASK, 6).restore(blob)
    with pytest.raises(EnvError, match="not a counter-audit snapshot"):
        other.restore(b"{}")


@dataclass(frozen=True)
class Knobs:
    hops: tuple[int, ...] = (2,)
    size: int = 10


def test_knobs_from_spec_refuses_unknown_knobs_by_name_and_turns_lists_into_tuples() -> None:
    assert knobs_from_spec(Knobs, {"hops": [1, 3], "size": 4}, "counter") == Knobs((1, 3), 4)
    assert knobs_from_spec(Knobs, {"hops": 3}, "counter") == Knobs((3,))
    with pytest.raises(ValueError, match=r"bad counter task spec: unknown knob\(s\) \['depth'\]; known: \['hops', 'size'\]"):
        knobs_from_spec(Knobs, {"depth": 1}, "counter")
