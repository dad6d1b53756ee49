"""Budgeted tool environments: an episode is at most `max_calls` tool calls, errors included.

    class ToolGymEnv(WorldEnv):              # self.world: a dataclass extending CallLedger
        def _run(self, call): ...            # one tool body; its name and arguments are already checked

BudgetedEnv keeps the budgeted-step contract once for phantom, graphcert, improve, improve-rounds, riskprobe and
toolgym: a call after the end is refused and changes nothing; every other call counts against the budget;
the tool name and arguments are checked against the tool's spec before `_run` sees them; the call that
reaches `max_calls` ends the episode as "max_steps" unless it ended it itself; and the step that ends the
episode carries done, the reason and the composite (`score()`) as its reward. `max_steps`, `done` and
`termination_reason` follow from the budget.

Two flavours keep what their environments have recorded since version 1 (refusal texts and state layout are
part of every record, so they are not unified):
    WorldEnv    state in `self.world` (a CallLedger dataclass), pickled snapshots, refusals {"error": text}.
    AuditedEnv  state in `self._state` (a StepLedger dataclass with the evidence trail), JSON snapshots tied to
                the task and seed, refusals {"error": code, "message": text}, each refusal logged in the trail.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from abc import abstractmethod
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol, TypeVar

from environments.core import Env, EnvError, StepResult, ToolCall, validate_arguments


class Ledger(Protocol):
    """The budget's part of an episode state: the calls taken, and whether and why the episode ended."""

    def count_call(self) -> int:
        """Counts one more call; returns the calls taken so far."""
        ...

    def end(self, reason: str) -> None: ...

    @property
    def ended(self) -> bool: ...

    @property
    def end_reason(self) -> str | None: ...


@dataclass(kw_only=True)
class CallLedger:
    """A WorldEnv world's budget fields; keyword-only, so a world's own fields keep their positions."""

    calls: int = 0
    finished: bool = False
    reason: str | None = None

    def count_call(self) -> int:
        self.calls += 1
        return self.calls

    def end(self, reason: str) -> None:
        self.finished, self.reason = True, reason

    @property
    def ended(self) -> bool:
        return self.finished

    @property
    def end_reason(self) -> str | None:
        return self.reason


@dataclass
class StepLedger:
    """An AuditedEnv state's budget fields and evidence trail (every call, what it saw, every refusal)."""

    steps: int = 0
    errors: int = 0
    trail: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    termination_reason: str | None = None

    def count_call(self) -> int:
        self.steps += 1
        return self.steps

    def end(self, reason: str) -> None:
        self.done, self.termination_reason = True, reason

    @property
    def ended(self) -> bool:
        return self.done

    @property
    def end_reason(self) -> str | None:
        return self.termination_reason


class BudgetedEnv(Env):
    """An Env whose episode is a budget of `max_calls` tool calls (module docstring). Subclasses set `max_calls`
    in __init__ and write `_run`; a flavour (WorldEnv, AuditedEnv) supplies the ledger and the refusals."""

    max_calls: int

    @property
    @abstractmethod
    def _ledger(self) -> Ledger: ...

    @abstractmethod
    def _run(self, call: ToolCall) -> StepResult:
        """One tool body; `call` names a tool of `tools()` and its arguments fit the tool's schema."""

    @abstractmethod
    def _refuse(self, code: str, message: str) -> StepResult:
        """An error result for a refused call in this flavour's shape."""

    @abstractmethod
    def _unknown_tool(self, name: str) -> StepResult: ...

    @abstractmethod
    def _after_end(self) -> StepResult:
        """The answer to a call after the episode ended."""

    def _record(self, call: ToolCall, result: StepResult) -> None:
        """Notes a call's result in the episode state (AuditedEnv logs refusals); the default keeps nothing."""

    @property
    def max_steps(self) -> int:
        """The tool-call budget; the runner uses it as its step limit."""
        return self.max_calls

    @property
    def done(self) -> bool:
        return self._ledger.ended

    @property
    def termination_reason(self) -> str | None:
        return self._ledger.end_reason if self._ledger.ended else None

    def step(self, call: ToolCall) -> StepResult:
        ledger = self._ledger
        if ledger.ended:
            return self._after_end()
        calls = ledger.count_call()
        spec = self.tool(call.name)
        if spec is None:
            result = self._unknown_tool(call.name)
        elif problem := validate_arguments(spec.parameters, call.arguments):
            result = self._refuse("invalid_arguments", problem)
        else:
            result = self._run(call)
        self._record(call, result)
        if not ledger.ended and calls >= self.max_calls:
            ledger.end("max_steps")
        if ledger.ended:
            result.done, result.termination_reason = True, ledger.end_reason
            result.reward = self.score().composite
        return result


class WorldEnv(BudgetedEnv):
    """A budgeted environment whose whole episode state is `self.world`: snapshots pickle it, refusals read
    {"error": text}, a call after the end repeats the end's reason."""

    world: CallLedger

    @property
    def _ledger(self) -> Ledger:
        return self.world

    def _refuse(self, code: str, message: str) -> StepResult:
        return StepResult(content={"error": message}, is_error=True)

    def _unknown_tool(self, name: str) -> StepResult:
        return self._refuse("unknown_tool", f"unknown tool {name!r}; tools: {[t.name for t in self.tools()]}")

    def _after_end(self) -> StepResult:
        return StepResult(content={"error": "the episode is over"}, is_error=True, done=True, termination_reason=self.world.reason)

    def snapshot(self) -> bytes:
        return pickle.dumps(self.world)

    def restore(self, blob: bytes) -> None:
        self.world = pickle.loads(blob)


def refusal(code: str, message: str, *, done: bool = False) -> StepResult:
    """An AuditedEnv error result: a stable code for programs and a message for people."""
    return StepResult(content={"error": code, "message": message}, is_error=True, done=done)


class AuditedEnv(BudgetedEnv):
    """A budgeted environment whose episode state is `self._state`, a StepLedger: every refusal is counted and
    logged in its trail, snapshots are its JSON tied to the task and seed, and the state hash covers it with
    `_fixed_state()` (what identifies the read-only world the state belongs to)."""

    _state: StepLedger

    @abstractmethod
    def _fixed_state(self) -> dict[str, Any]: ...

    @property
    def _ledger(self) -> Ledger:
        return self._state

    def _refuse(self, code: str, message: str) -> StepResult:
        return refusal(code, message)

    def _unknown_tool(self, name: str) -> StepResult:
        return refusal("unknown_tool", f"no tool named {name!r}; tools are {', '.join(t.name for t in self.tools())}")

    def _after_end(self) -> StepResult:
        return refusal("episode_over", "the episode is over; no further calls are taken", done=True)

    def _record(self, call: ToolCall, result: StepResult) -> None:
        if result.is_error:
            self._state.errors += 1
            self._state.trail.append({"step": self._state.steps, "tool": call.name, "error": result.content["error"]})

    def snapshot(self) -> bytes:
        return json.dumps({"task": self.task.id, "seed": self.seed, "state": asdict(self._state)}, sort_keys=True).encode()

    def restore(self, blob: bytes) -> None:
        try:
            payload = json.loads(blob)
            state = type(self._state)(**payload["state"])
        except (ValueError, TypeError, KeyError) as exc:
            raise EnvError("bad_snapshot", f"not a {self.name} snapshot: {exc}") from exc
        if payload.get("task") != self.task.id or payload.get("seed") != self.seed:
            raise EnvError(
                "snapshot_mismatch", f"snapshot of {payload.get('task')} seed {payload.get('seed')}, not {self.task.id} seed {self.seed}"
            )
        self._state = state

    def state_hash(self) -> str:
        canonical = json.dumps({**self._fixed_state(), "state": asdict(self._state)}, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


Knobs = TypeVar("Knobs")


def knobs_from_spec(cls: type[Knobs], spec: dict[str, Any], env: str) -> Knobs:
    """A task's knob dataclass from TaskSpec.spec: unknown knobs are refused by name, and a knob whose default
    is a tuple takes a list or a single value (JSON has no tuples). The dataclass validates the values."""
    known = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise ValueError(f"bad {env} task spec: unknown knob(s) {unknown}; known: {sorted(known)}")
    values = dict(spec)
    for name, value in values.items():
        if isinstance(known[name].default, tuple):
            values[name] = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return cls(**values)
