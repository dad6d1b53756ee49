"""Step analyzers: after each executed agent step, rules write guidance and a value score for that step.

    analysis = analyzer_for("toolgym").analyze(history, step)   # StepAnalysis(guidance="...", value=0.1)
    for index, analysis in analyze_record(record): ...           # every actor step of a trajectory record

An analyzer reads the steps before `step` (`history`, in record order, the environment's observation included)
and the executed step itself (its calls, results, events, reward), never the environment's hidden state: it
sees what the agent saw plus the consequence of its own step. It is pure and deterministic (same input, same
output), so a trajectory's analyses can be recomputed at training time from the record alone.

`value` in [0, 1] says how good the step was by the rules (1: nothing wrong, 0: an error or a step that
works against the task); `guidance` says, in one or two sentences addressed to the agent, what the step
should have been. The training recipe `gated_sd` (training/recipes/gated_sd.py) shows the guidance to a
self-teacher as privileged context and gates the distillation of that step by its value.

An environment declares its analyzer in its metadata (`EnvMeta.analyzer`); one without gets the generic analyzer
(failed calls and repeated calls only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from environments.meta import load_target
from environments.records import Record, Step
from environments.roles import ACTOR, step_role
from environments.rule_critic import REPEATS, call_key, env_calls, failure_advice

NO_PROBLEM = "No problem spotted in this step."


@dataclass(frozen=True)
class StepAnalysis:
    guidance: str
    """What the step should have been, addressed to the agent ("You looked up box; the question asks ...")."""
    value: float
    """How good the step was by the rules, in [0, 1] (1: nothing wrong)."""

    def __post_init__(self) -> None:
        assert 0.0 <= self.value <= 1.0, f"value {self.value!r} is outside [0, 1]"


class Analyzer(Protocol):
    def analyze(self, history: list[Step], step: Step) -> StepAnalysis:
        """The analysis of `step`, executed after `history` (the record's earlier steps)."""
        ...


def is_actor_step(step: Step) -> bool:
    return step.get("source") != "env" and step_role(step) == ACTOR


def repeated_call(history: list[Step], step: Step) -> str | None:
    """The call key when `step` repeats the actor's previous REPEATS - 1 steps exactly, else None."""
    keys = [";".join(call_key(c) for c in env_calls(s)) for s in [*[s for s in history if is_actor_step(s)][-(REPEATS - 1) :], step]]
    return keys[0] if len(keys) == REPEATS and len(set(keys)) == 1 and keys[0] else None


class GenericAnalyzer:
    """Any environment: a failed call scores 0, the same call REPEATS times in a row 0.2, anything else 1."""

    def analyze(self, history: list[Step], step: Step) -> StepAnalysis:
        failed = failure_advice(step)
        if failed:
            return StepAnalysis(failed, 0.0)
        repeated = repeated_call(history, step)
        if repeated:
            return StepAnalysis(f"You made the same call {REPEATS} times in a row ({repeated[:120]}); try another approach.", 0.2)
        return StepAnalysis(NO_PROBLEM, 1.0)


def analyzer_for(env: str) -> Analyzer:
    """The analyzer the environment declares (EnvMeta.analyzer), or the generic one."""
    from environments.registry import env_meta  # the registry loads the env packages, whose analyzers import this module

    target = env_meta(env).analyzer
    analyzer: Analyzer = load_target(target)() if target else GenericAnalyzer()
    return analyzer


def analyze_record(record: Record) -> list[tuple[int, StepAnalysis]]:
    """(step index, analysis) for every actor step of a trajectory record, in order."""
    analyzer = analyzer_for(str((record.get("header") or {}).get("env") or ""))
    steps = record["steps"]
    return [(step["index"], analyzer.analyze(steps[:position], step)) for position, step in enumerate(steps) if is_actor_step(step)]
