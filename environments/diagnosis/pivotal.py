"""Pivotal mistakes: the earliest step after which a strong continuation can no longer reach a pass.

    result = find_pivotal_step(record, anchor_factory=lambda env, seed: make_policy("smart-triage", env, seed))
    result.step        # the agent step whose action lost the episode, or None (with result.reason)

`recoverable(k)` asks whether the anchor, taking over with the steps before k replayed, passes for any of
`seeds`. The pivotal step is the last k that is still recoverable when k + 1 (the state after step k's action)
is not. `search="binary"` assumes recoverability, once lost, stays lost (true of almost all tasks, and the
answer is always a real transition: recoverable before it and not after); `search="linear"` checks every step
from the start and finds the earliest loss exactly, at one anchor run per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from environments.core import Env, Policy
from environments.diagnosis.branching import env_for_record
from environments.diagnosis.taxonomy import AGENT_SOURCES
from environments.records import Record, record_score
from environments.runner import run_episode

AnchorFactory = Callable[[Env, int], Policy]


@dataclass
class PivotalResult:
    step: int | None
    reason: str  # "found" | "anchor_cannot_pass" | "recoverable_at_end" | "no_agent_steps"
    anchor: str
    seeds: tuple[int, ...]
    checks: dict[int, dict[str, Any]] = field(default_factory=dict)  # prefix length -> {passed, composites}

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "reason": self.reason,
            "anchor": self.anchor,
            "seeds": list(self.seeds),
            "checks": {str(k): v for k, v in sorted(self.checks.items())},
            "anchor_runs": sum(len(v["composites"]) for v in self.checks.values()),
        }


def takeover(record: Record, prefix_length: int, anchor_factory: AnchorFactory, seed: int) -> Record:
    """The anchor plays on after steps [0, prefix_length) are replayed; the resulting record. The record's harness
    step cap (`harness.max_steps`, as branch_run reads it) binds the anchor too: the turns the agent spent are spent."""
    env = env_for_record(record)
    limit = (record["header"].get("harness") or {}).get("max_steps")
    return run_episode(env, anchor_factory(env, seed), start_history=record["steps"][:prefix_length], source="branch", max_steps=limit)


def find_pivotal_step(
    record: Record, *, anchor_factory: AnchorFactory, seeds: tuple[int, ...] = (0,), search: str = "binary"
) -> PivotalResult:
    assert search in ("binary", "linear"), f"search must be binary or linear, got {search!r}"
    assert seeds, "give at least one anchor seed"
    steps = record["steps"]
    agent_indices = [s["index"] for s in steps if s.get("source") in AGENT_SOURCES and s["index"] >= 1]
    probe_env = env_for_record(record)
    anchor_name = anchor_factory(probe_env, seeds[0]).name
    result = PivotalResult(step=None, reason="found", anchor=anchor_name, seeds=tuple(seeds))
    if not agent_indices:
        result.reason = "no_agent_steps"
        return result

    def recoverable(prefix_length: int) -> bool:
        if prefix_length not in result.checks:
            composites, passed = [], False
            for seed in seeds:
                score = record_score(takeover(record, prefix_length, anchor_factory, seed))
                composites.append(round(float(score["composite"]), 6))
                passed = passed or bool(score["passed"])
                if passed:
                    break
            result.checks[prefix_length] = {"passed": passed, "composites": composites}
        return bool(result.checks[prefix_length]["passed"])

    # Candidate cut points: before each agent step, and after the last step.
    cuts = [*agent_indices, len(steps)]
    if not recoverable(cuts[0]):
        result.reason = "anchor_cannot_pass"
        return result
    if recoverable(cuts[-1]):
        result.reason = "recoverable_at_end"
        return result
    if search == "linear":
        lost = next(i for i, cut in enumerate(cuts) if not recoverable(cut))
    else:
        lo, hi = 0, len(cuts) - 1  # recoverable(cuts[lo]) and not recoverable(cuts[hi])
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if recoverable(cuts[mid]) else (lo, mid)
        lost = hi
    result.step = agent_indices[lost - 1]
    return result
