"""Teams in the runner: the turns of the critic, the consultant, the harness and the environment's role slots.

    crew = Crew(env, team, emit=sink_step)        # the runner makes one per episode (environments.runner)
    tools = crew.actor_tools(env.tools())         # + ask_critic (critic on_request) and consult (consultant)
    content, is_error = crew.answer(call, steps)  # a runner tool call, answered without the environment
    chain, reason = crew.after_actor_step(steps, chain, action=a, failed=f, reason=r, limit=n)

    slots = slot_policies(env)                    # the declared slots, each with its default unless overridden
    chain, reason = slot_turns(env, slots, steps, chain, emit=append)   # other front ends (the play page) alike

Every turn is a step of its own with `role` set, appended right after the actor step it belongs to, in this
order: the answers to the actor's runner calls (consultant, critic on request), the slots' turns, the critic
on a trigger, the harness decisions. Only the actor's env calls and the slots' calls reach the environment;
critic, consultant and harness steps carry no tool calls (a consultant's suggestions are in its meta), so
their steps chain the unchanged state and replay re-executes nothing for them.

When each role acts (deterministic; a role's own policy may be anything):
- critic: after an actor step that called `ask_critic` (trigger "request", the advice is also the call's
  result); else after one whose call failed when `on_error` (trigger "error"); else after every `every`-th
  actor step (trigger "schedule"). At most one critic turn per actor step; meta.advises_step names it.
- consultant: on each `consult` call; the answer is {"suggested_calls", "reasoning"}, meta.cost what it cost
  and meta.asked_at the actor step that asked (a call with bad arguments is refused: no turn, no cost). The header's "reward" is the composite minus all consultation costs (the score is unchanged).
- harness (HARNESS_LEVELS), steps of source "system" whose meta.decision is one of:
  track   (full, guided) every HARNESS_EVERY actor steps: the tools not used yet and the calls still failing
  hint    (full) with each track: the first unused tool and what it does, as what to investigate next
  verify  (full, guided) once per episode: when the actor stops, the stop is held back and the actor is asked
          to verify first (stopping again ends it); or, when no stop came, before the last allowed step
  stop    (full, light) the last STOP_AFTER actor steps were the same action and each failed or did
          nothing in the environment: the episode ends as "too_many_errors"
- slots (EnvMeta.roles): after each actor step with a message, every slot in declaration order acts once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from environments.core import Action, Env, EnvError, Policy, ToolCall, ToolSpec, chain_hash, validate_arguments
from environments.records import Step
from environments.registry import env_meta
from environments.roles import ACTOR, ASK_CRITIC, CONSULT, CONSULTANT, CRITIC, HARNESS, Team, step_role
from environments.rule_critic import actor_steps, call_key, env_calls, unused_tools
from environments.steps import apply_action
from environments.trajectory import make_step

HARNESS_EVERY = 5  # actor steps between two tracker updates
STOP_AFTER = 3  # identical fruitless actor steps in a row that end the episode

_QUESTION = {
    "type": "object",
    "properties": {"question": {"type": "string", "maxLength": 500}},
    "required": [],
    "additionalProperties": False,
}
ASK_CRITIC_TOOL = ToolSpec(
    name=ASK_CRITIC, description="Ask your critic for advice on what you have done so far. Free.", parameters=_QUESTION, op_cost=0
)
CONSULT_TOOL = ToolSpec(
    name=CONSULT,
    description="Ask a stronger consultant what to do next: it answers with suggested calls and its reasoning. Each consultation has a cost.",
    parameters=_QUESTION,
    op_cost=0,
)


def _source(policy: Policy, default: str) -> str:
    return "human" if policy.kind == "human" else default


def safe_act(policy: Policy, history: list[Step], tools: list[ToolSpec]) -> tuple[Action, float]:
    """A role's turn and its latency in ms; its exception becomes an empty turn with the cause in
    meta["policy_exception"] (the runner ends the episode on the actor's; other front ends may read it too)."""
    started = time.perf_counter()
    try:
        action = policy.act(history, tools)
    except Exception as exc:
        action = Action(meta={"policy_exception": f"{type(exc).__name__}: {exc}"[:500]})
    return action, round((time.perf_counter() - started) * 1000, 3)


def slot_policies(env: Env, overrides: Mapping[str, Policy] | None = None) -> dict[str, Policy]:
    """The environment's role slots in declaration order, each filled with `overrides[name]` or its default.
    An override for a slot the environment does not declare is an EnvError naming it."""
    declared = {slot.name: slot for slot in env_meta(env.name).roles}
    unknown = sorted(set(overrides or {}) - set(declared))
    if unknown:
        raise EnvError("unknown_slot", f"{env.name} declares no role slot {unknown[0]!r}; its slots: {sorted(declared) or 'none'}")
    return {name: (overrides or {}).get(name) or slot.default(env, env.seed) for name, slot in declared.items()}


def slot_turns(
    env: Env, slots: Mapping[str, Policy], steps: list[Step], chain: str, *, emit: Callable[[Step], None]
) -> tuple[str, str | None]:
    """The slots' turns after an actor step that spoke: each slot in order acts once on `steps`, its step is
    appended (and emitted) with role = the slot's name, and its calls reach the environment. Returns the chain
    and the end reason when a slot's turn ended the episode (None while it runs). The runner's crew and the
    play page both call this, so a slot acts the same whoever plays the actor."""
    tools = env.tools()
    for name, policy in slots.items():
        action, latency = safe_act(policy, steps, tools)
        if not action.tool_calls and action.message is None and action.error is None:
            action.message = ""  # a slot that has nothing to say still took its turn; not an invalid action
        step, chain, _ = apply_action(env, action, index=len(steps), chain=chain, source=_source(policy, "user"), role=name)
        step["latency_ms"] = latency
        steps.append(step)
        emit(step)
        if env.done:
            return chain, env.termination_reason or "horizon_reached"
    return chain, None


class Crew:
    """The roles around the actor for one episode; `active` is False for a plain agent (its record stays as it was)."""

    def __init__(self, env: Env, team: Team, *, emit: Callable[[Step], None]) -> None:
        self.env, self.team, self.emit = env, team, emit
        self.slots = slot_policies(env, team.slots)
        self.active = bool(team.critic or team.consultant or team.harness_level != "tools-only" or self.slots)
        self.env_tools = env.tools()
        self.pending: list[tuple[str, Policy, Action, float, dict[str, Any]]] = []  # role turns answering the step being built

    def describe(self) -> dict[str, Any]:
        team, out = self.team, {"actor": self.team.actor.describe(), "harness_level": self.team.harness_level}
        if team.critic:
            c = team.critic
            out[CRITIC] = {"policy": c.policy.describe(), "every": c.every, "on_request": c.on_request, "on_error": c.on_error}
        if team.consultant:
            out[CONSULTANT] = {"policy": team.consultant.policy.describe(), "cost": team.consultant.cost}
        defaults = {name for name in self.slots if name not in team.slots}
        out["slots"] = {name: {"policy": p.describe(), "default": name in defaults} for name, p in self.slots.items()}
        return out

    def actor_tools(self, tools: list[ToolSpec]) -> list[ToolSpec]:
        critic, consultant = self.team.critic, self.team.consultant
        return [*tools, *([ASK_CRITIC_TOOL] if critic and critic.on_request else []), *([CONSULT_TOOL] if consultant else [])]

    # --- the actor's runner calls -------------------------------------------------------------------------

    def answer(self, call: ToolCall, history: list[Step]) -> tuple[Any, bool]:
        """The result of an ask_critic / consult call; the role's own turn is queued for the next step indices."""
        spec = next((t for t in self.actor_tools([]) if t.name == call.name), None)
        if spec is None:
            return {"error": f"{call.name} is not available in this episode"}, True
        if problem := validate_arguments(spec.parameters, call.arguments):
            return {"error": problem}, True  # refused like a bad env call: no turn, no cost
        question = call.arguments.get("question")
        asked = {"answers_call": call.id, **({"question": question} if question else {})}
        if call.name == ASK_CRITIC:
            assert self.team.critic is not None
            action, latency = safe_act(self.team.critic.policy, history, self.env_tools)
            meta = {"trigger": "request", "advises_step": len(history), **asked}
            self.pending.append((CRITIC, self.team.critic.policy, action, latency, meta))
            return {"advice": action.message or ""}, action.message is None
        assert self.team.consultant is not None
        action, latency = safe_act(self.team.consultant.policy, history, self.env_tools)
        suggested = [{"name": c.name, "arguments": c.arguments} for c in action.tool_calls]
        reasoning = action.reasoning or action.message or ""
        meta = {"suggested_calls": suggested, "cost": self.team.consultant.cost, "asked_at": len(history), **asked}
        self.pending.append((CONSULTANT, self.team.consultant.policy, action, latency, meta))
        return {"suggested_calls": suggested, "reasoning": reasoning}, bool(action.meta.get("policy_exception"))

    # --- turns after an actor step --------------------------------------------------------------------------

    def after_actor_step(
        self, steps: list[Step], chain: str, *, action: Action, failed: bool, reason: str | None, limit: int
    ) -> tuple[str, str | None]:
        """Append the turns that follow the actor step just appended; returns the chain and the (new) end reason."""
        actor_index = steps[-1]["index"]
        requested = any(role == CRITIC for role, *_ in self.pending)
        for role, policy, act, latency, meta in self.pending:
            chain = self._role_step(steps, chain, role, policy, act, latency, meta)
        self.pending = []
        if reason is None and action.message:
            chain, reason = slot_turns(self.env, self.slots, steps, chain, emit=self.emit)
        critic = self.team.critic
        count = len(actor_steps(steps))
        if critic and reason is None and not requested:
            trigger = "error" if critic.on_error and failed else "schedule" if critic.every and count % critic.every == 0 else None
            if trigger:
                act, latency = safe_act(critic.policy, steps, self.env_tools)
                meta = {"trigger": trigger, "advises_step": actor_index}
                chain = self._role_step(steps, chain, CRITIC, critic.policy, act, latency, meta)
        return self._harness(steps, chain, reason=reason, count=count, limit=limit)

    def _harness(self, steps: list[Step], chain: str, *, reason: str | None, count: int, limit: int) -> tuple[str, str | None]:
        level = self.team.harness_level
        verified = any(s.get("meta", {}).get("decision") == "verify" for s in steps if step_role(s) == HARNESS)
        if level in ("full", "guided") and not verified:
            if reason == "agent_stop" and not self.env.done:  # an env that already ended (an answer) cannot take another step
                text = "Before you finish: check that every open item is handled and your last changes did what you meant. Stop again to finish."
                return self._decide(steps, chain, "verify", text, {"on": "agent_stop"}), None
            if reason is None and count == limit - 1:
                text = "One step is left: verify your work now and use the last step for anything still open."
                chain = self._decide(steps, chain, "verify", text, {"on": "last_step"})
        if level in ("full", "light") and reason is None and self._no_progress(steps):
            text = f"The last {STOP_AFTER} actions were the same and achieved nothing: the harness ends the episode."
            return self._decide(steps, chain, "stop", text, {"repeated": STOP_AFTER}), "too_many_errors"
        if level in ("full", "guided") and reason is None and count % HARNESS_EVERY == 0:
            unused, failing = unused_tools(steps, self.env_tools), self._failing(steps)
            text = f"Tracker: not used yet: {', '.join(unused) or 'none'}; still failing: {', '.join(failing) or 'none'}."
            chain = self._decide(steps, chain, "track", text, {"unused_tools": unused, "failing": failing})
            if level == "full" and unused:
                spec = next(t for t in self.env_tools if t.name == unused[0])
                text = f"Investigate next: {spec.name}: {spec.description.split('. ')[0]}"
                chain = self._decide(steps, chain, "hint", text, {"tool": spec.name})
        return chain, reason

    @staticmethod
    def _failing(steps: list[Step]) -> list[str]:
        """Tools whose latest call failed (by the actor), in the order they last failed."""
        last: dict[str, bool] = {}
        for step in actor_steps(steps):
            outcome = {r.get("call_id"): bool(r.get("is_error")) for r in step.get("results") or []}
            for call in env_calls(step):
                last.pop(call["name"], None)
                last[call["name"]] = outcome.get(call.get("id"), False)
        return [name for name, bad in last.items() if bad]

    @staticmethod
    def _no_progress(steps: list[Step]) -> bool:
        recent = actor_steps(steps)[-STOP_AFTER:]
        if len(recent) < STOP_AFTER:
            return False
        keys = {(";".join(call_key(c) for c in env_calls(s)), str(s.get("message"))) for s in recent}
        fruitless = all(any(r.get("is_error") for r in s.get("results") or []) or not env_calls(s) for s in recent)
        return len(keys) == 1 and fruitless

    # --- steps ----------------------------------------------------------------------------------------------

    def _append(self, steps: list[Step], step: Step) -> None:
        steps.append(step)
        self.emit(step)

    def _role_step(
        self, steps: list[Step], chain: str, role: str, policy: Policy, action: Action, latency: float, meta: dict[str, Any]
    ) -> str:
        """A turn that does not act in the environment: no tool calls, the unchanged state chained."""
        chain = chain_hash(chain, self.env.state_hash())
        step = make_step(
            index=len(steps),
            source=_source(policy, "agent"),
            message=action.message,
            reasoning=action.reasoning,
            state_hash=chain,
            token_ids=action.token_ids,
            logprobs=action.logprobs,
            prompt_token_ids=action.prompt_token_ids,
            latency_ms=latency,
            meta={**action.meta, **meta},
            role=role,
        )
        self._append(steps, step)
        return chain

    def _decide(self, steps: list[Step], chain: str, decision: str, text: str, meta: dict[str, Any]) -> str:
        chain = chain_hash(chain, self.env.state_hash())
        step = make_step(
            index=len(steps), source="system", message=text, state_hash=chain, meta={"decision": decision, **meta}, role=HARNESS
        )
        self._append(steps, step)
        return chain

    # --- accounting -----------------------------------------------------------------------------------------

    def accounting(self, steps: list[Step]) -> dict[str, dict[str, Any]]:
        """{role: {"turns", "tokens", "cost", "calls"}} over the record's steps (so a resumed episode counts its prefix)."""
        roles = [ACTOR, *([CRITIC] if self.team.critic else []), *([CONSULTANT] if self.team.consultant else []), *self.slots]
        roles += [HARNESS] if self.team.harness_level != "tools-only" else []
        out = {role: {"turns": 0, "tokens": 0, "cost": 0.0, "calls": 0} for role in roles}
        for step in steps:
            role = step_role(step)
            if role not in out:
                continue
            meta, row = step.get("meta") or {}, out[role]
            row["turns"] += 1
            row["tokens"] += len(step.get("token_ids") or []) + len(step.get("prompt_token_ids") or [])
            row["cost"] = round(row["cost"] + float(meta.get("cost") or 0.0), 9)
            row["calls"] += role == CONSULTANT or (role == CRITIC and meta.get("trigger") == "request")
        return out
