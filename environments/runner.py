"""Run an episode of any environment with any policy, step by step, into a canonical trajectory record.

    record = run_episode(env, policy, sink=sink)                 # env already reset (registry.make does it)
    record = run_episode(env, policy, start_history=steps)       # resume: replays `steps`, then continues
    record = run_episode(env, Team(actor=policy, critic=RoleSpec(policy=critic, every=5)))   # a team (environments.team)

Each step is one policy decision: its tool calls, their results, events, rewards, simulated times, the
chained state hash and the policy's token ids/logprobs. Step 0 is the environment's opening observation.
An invalid action (Action.error, or a tool error) is recorded and its error goes back to the policy as the
step's result. Every episode ends with exactly one termination reason from core.TERMINATION_REASONS.

A sink is any object with `on_step(step)`; `on_start(header)` and `on_finish(record)` are called when present.

A team's other roles take their turns as steps of their own after each actor step (environments.team); its
header adds "team" and "roles" (per-role accounting) and its "reward" is the composite minus consultation
costs. A bare policy, or a team with nothing beside the actor, records exactly what a plain episode records.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from environments.core import Env, Policy, chain_hash, tool_schema_hash
from environments.policies import make_policy, register_policy
from environments.records import Header, Record, Step
from environments.replay import replay_prefix
from environments.roles import ACTOR, Team, step_role
from environments.steps import apply_action
from environments.team import Crew
from environments.trajectory import make_step, new_record

__all__ = [
    "run_episode",
    "make_policy",
    "register_policy",
    "Sink",
    "opening_step",
    "apply_action",
    "env_end_reason",
    "DEFAULT_MAX_CONSECUTIVE_ERRORS",
]

DEFAULT_MAX_CONSECUTIVE_ERRORS = 50


class Sink(Protocol):
    def on_step(self, step: Step) -> None: ...


def opening_step(env: Env) -> Step:
    """Step 0: the environment's opening observation, hashed as the root of the chain."""
    observation = env.reset()
    return make_step(
        index=0, source="env", message=observation.text, state_hash=chain_hash("", env.state_hash()), meta={"observation": observation.data}
    )


def env_end_reason(env: Env) -> str | None:
    """The environment's own termination reason once it is done (None while it runs)."""
    if not env.done:
        return None
    return env.termination_reason or "horizon_reached"  # a done env that names no reason ran its full length


def run_episode(
    env: Env,
    policy: Policy | Team,
    *,
    sink: Any = None,
    max_steps: int | None = None,
    start_history: list[Step] | None = None,
    source: str = "rollout",
    harness: dict[str, Any] | None = None,
    parent: dict[str, Any] | None = None,
    max_consecutive_errors: int = DEFAULT_MAX_CONSECUTIVE_ERRORS,
) -> Record:
    """Play until the environment ends, the policy stops, or a harness limit hits; return the record.

    `max_steps` counts the actor's steps (default: the env's declared `max_steps`). With
    `start_history`, the env is rebuilt by replaying those steps (the state-hash chain is verified, a
    divergence raises ReplayDivergence) and the episode continues from there.
    """
    team = policy if isinstance(policy, Team) else Team(actor=policy)
    actor = team.actor
    crew = Crew(env, team, emit=sink.on_step if sink is not None else lambda step: None)
    limit = max_steps if max_steps is not None else env.max_steps
    tools = env.tools()
    actor_tools = crew.actor_tools(tools)
    header: Header = {
        **env.header(),
        "policy": actor.describe(),
        "harness": harness or {},
        "source": source,
        "parent": parent,
        "tools": [t.openai_schema() for t in actor_tools],
    }
    header["tool_schema_hash"] = tool_schema_hash(tools)
    if crew.active:
        header["team"] = crew.describe()
    if hasattr(sink, "on_start"):
        sink.on_start(header)
    if start_history:
        steps = [s.copy() for s in start_history]
        chain = replay_prefix(env, steps)
    else:
        steps = [opening_step(env)]
        root = steps[0]["state_hash"]
        assert root is not None, "opening_step hashes the root of the chain"
        chain = root
        if sink is not None:
            sink.on_step(steps[0])
    reason: str | None = env_end_reason(env)
    errors_in_a_row = 0
    agent_steps = sum(1 for s in steps if s["source"] != "env" and step_role(s) == ACTOR)
    while reason is None:
        if agent_steps >= limit:
            reason = "max_steps"
            break
        started = time.perf_counter()
        try:
            action = actor.act(steps, actor_tools)
        except Exception as exc:  # a policy bug ends the episode as agent_error, recorded, never a crash
            steps[-1].setdefault("meta", {})["policy_exception"] = f"{type(exc).__name__}: {exc}"[:500]
            # The last step is already with the sink; the header reaches it at the end, so the cause goes there too.
            header["termination_cause"] = {"type": type(exc).__name__, "message": str(exc)[:500]}
            reason = "agent_error"
            break
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        step, chain, failed = apply_action(env, action, index=len(steps), chain=chain, answer=lambda call: crew.answer(call, steps))
        step["latency_ms"] = latency_ms
        steps.append(step)
        agent_steps += 1
        if sink is not None:
            sink.on_step(step)
        errors_in_a_row = errors_in_a_row + 1 if failed else 0
        if env.done:
            reason = env_end_reason(env)
        elif action.stop:
            reason = "agent_stop"
        elif errors_in_a_row >= max_consecutive_errors:
            reason = "too_many_errors"
        if crew.active:
            chain, reason = crew.after_actor_step(steps, chain, action=action, failed=failed, reason=reason, limit=limit)
    score = env.score()
    header.update({"termination_reason": reason, "score": score.to_dict(), "reward": score.composite})
    if crew.active:
        header["roles"] = crew.accounting(steps)
        header["reward"] = round(score.composite - sum(row["cost"] for row in header["roles"].values()), 9)
    record = new_record(header=header, steps=steps)
    if hasattr(sink, "on_finish"):
        sink.on_finish(record)
    return record
