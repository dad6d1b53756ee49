"""Policies wrapped for lab rollouts: resuming a scripted policy mid-episode, pacing, and harness stops.

A rollout resumed after a crash rebuilds the environment by replay (runner `start_history`). A scripted
anchor also carries state of its own (its daily plan, its RNG), so a fresh one would continue differently
from the run that crashed. `FastForwardPolicy` restores that state too: before its first real decision it
replays the stored prefix through the policy, feeding it the stored results and applying the stored calls,
so the resumed episode continues with exactly the state-hash chain the uninterrupted run would have had.
LLM policies need none of this: they sample with per-step seeds, a pure function of the history.
"""

from __future__ import annotations

import time
from typing import Any, cast

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.replay import ReplayDivergence
from training.policies.harness import HarnessStop


class FastForwardPolicy(Policy):
    def __init__(self, inner: Policy, env: Env, prefix: list[Step]) -> None:
        self.inner = inner
        self.env = env
        self.prefix = prefix
        self.name, self.kind = inner.name, inner.kind
        self.agreed = 0  # stored agent steps the restarted policy chose identically (all of them for a deterministic policy)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        if self.prefix:
            self._fast_forward(tools)
            self.prefix = []
        return self.inner.act(history, tools)

    def _fast_forward(self, tools: list[ToolSpec]) -> None:
        """Walk the prefix again with the policy in the loop; the environment ends where it was."""
        expected = self.env.state_hash()
        self.env.reset()
        steps = self.prefix
        for i, step in enumerate(steps):
            if step["source"] != "agent":
                continue
            action = self.inner.act(steps[:i], tools)
            stored = [(c["name"], c["arguments"]) for c in step.get("tool_calls") or []]
            self.agreed += [(c.name, c.arguments) for c in action.tool_calls] == stored
            if not (step.get("meta") or {}).get("invalid_action"):
                for call in step.get("tool_calls") or []:
                    # arguments that were a string (JSON that did not parse) go back as recorded, as replay does
                    arguments = cast(dict[str, Any], call["arguments"])
                    self.env.step(ToolCall(name=call["name"], arguments=arguments, id=call.get("id", "")))
        if self.env.state_hash() != expected:
            raise ReplayDivergence(steps[-1]["index"], expected, self.env.state_hash())


class GuardedPolicy(Policy):
    """Remembers a HarnessStop's termination reason (the runner records any policy exception as agent_error)
    and paces fast agents to at least `pace_ms` a step so spectators can follow them."""

    def __init__(self, inner: Policy, *, pace_ms: int = 0) -> None:
        self.inner = inner
        self.pace_s = pace_ms / 1000
        self.name, self.kind = inner.name, inner.kind
        self.stop_reason: str | None = None

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        started = time.monotonic()
        try:
            action = self.inner.act(history, tools)
        except HarnessStop as stop:
            self.stop_reason = stop.termination_reason
            raise
        remaining = self.pace_s - (time.monotonic() - started)
        if remaining > 0:
            time.sleep(remaining)
        return action
