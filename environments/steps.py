"""One action into the environment and out as a recorded step: the path every front end shares.

    step, chain, failed = apply_action(env, action, index=len(steps), chain=chain)

The runner, the team's role slots (environments.team), the MCP server, the workflow runner and the lab's play
page all record steps through `apply_action`, so a step looks the same and replays the same whoever took it.
It sits below the runner and the team, which both call it (environments.runner re-exports it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from environments.core import Action, Env, ToolCall, chain_hash
from environments.records import Step, ToolCallDict, ToolResultDict
from environments.replay import heard_by
from environments.roles import ACTOR, is_runner_call
from environments.trajectory import make_step


def apply_action(
    env: Env,
    action: Action,
    *,
    index: int,
    chain: str,
    source: str = "agent",
    role: str | None = None,
    answer: Callable[[ToolCall], tuple[Any, bool]] | None = None,
) -> tuple[Step, str, bool]:
    """Execute one action and build its step; returns (step, new chain hash, whether it was an error).

    Runner tools (ask_critic, consult) never reach the environment: `answer` gives their result (without it
    they are refused), so replay, which skips them, stays exact. Public so that other front ends (MCP server,
    Gymnasium wrapper, the lab's play page) record steps exactly as the runner does."""
    calls = [ToolCall(name=c.name, arguments=c.arguments, id=c.id or f"call_{index}_{i}") for i, c in enumerate(action.tool_calls)]
    tool_calls: list[ToolCallDict] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    results: list[ToolResultDict] = []
    events: list[dict[str, Any]] = []
    reward = 0.0
    sim_start = sim_end = None
    meta: dict[str, Any] = {}
    failed = False
    if action.error is not None:
        meta["invalid_action"] = action.error
        results.append({"call_id": calls[0].id if calls else "invalid", "content": {"error": action.error}, "is_error": True})
        failed = True
    else:
        for call in calls:
            if is_runner_call({"name": call.name}):
                content, is_error = answer(call) if answer else ({"error": f"{call.name} is not available in this episode"}, True)
                results.append({"call_id": call.id, "content": content, "is_error": is_error})
                failed = failed or is_error
                continue
            result = env.step(call)
            results.append({"call_id": call.id, "content": result.content, "is_error": result.is_error})
            events.extend(e.as_json() for e in result.events)
            reward += result.reward
            sim_start = result.sim_time_start if sim_start is None else sim_start
            sim_end = result.sim_time_end
            failed = failed or result.is_error
        if not calls and action.message is None and not action.stop:
            results.append(
                {"call_id": "invalid", "content": {"error": "the action had neither tool calls nor a message"}, "is_error": True}
            )
            failed = True
    if action.error is None and heard_by(env, role or ACTOR, action.message):
        env.hear(role or ACTOR, str(action.message))
    chain = chain_hash(chain, env.state_hash())
    step = make_step(
        index=index,
        source=source,
        message=action.message,
        reasoning=action.reasoning,
        tool_calls=tool_calls,
        results=results,
        reward=reward,
        sim_time_start=sim_start,
        sim_time_end=sim_end,
        events=events,
        state_hash=chain,
        token_ids=action.token_ids,
        logprobs=action.logprobs,
        prompt_token_ids=action.prompt_token_ids,
        meta={**action.meta, **meta},
        # A scripted policy acting for another role (an anchor's idea critic) may name it in its action's meta.
        **({"role": str(named)} if (named := role or action.meta.get("role")) else {}),
    )
    return step, chain, failed
