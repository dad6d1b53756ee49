"""The LLM harness every model-backed policy shares: prompt building, context management, turn limits, parsing.

    config = HarnessConfig.from_dict(agent_config["harness"])      # validated; unknown keys refused
    messages = build_messages(history, system_prompt=..., window_turns=8, summary="Day 3/35; cash ...")

A policy sees the trajectory so far (canonical step dicts). It renders them as chat messages: the system
prompt from the task's description, the opening observation as the first user turn, then agent turns
(assistant message + tool calls, then one tool message per result). Long episodes keep a rolling window of
the last `window_turns` agent turns; the turns dropped are replaced by one note carrying the environment's
state summary, so a 45-day run fits a small context. When even that does not fit, the policy raises
`HarnessStop("context_window_exceeded")`.

Malformed output never crashes an episode: it becomes an invalid action (Action.error) whose message goes
back to the model as the next turn, as real harnesses do.
"""

from __future__ import annotations

import hashlib
import json
from abc import abstractmethod
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.registry import env_meta
from environments.roles import ACTOR, CONSULTANT, CRITIC, RUNNER_TOOLS, USER
from training.context import compact_tool_listing, omission_note, truncate_messages
from training.policies.roles import (
    CONSULTANT_INSTRUCTION,
    LLM_ROLES,
    context_messages,
    critic_messages,
    is_actor_turn,
    parse_user_turn,
    user_messages,
)
from training.toolcall_parse import parse_tool_calls


class HarnessStop(Exception):
    """Ends the episode with a named termination reason (context_window_exceeded, infrastructure_error, ...).

    The runner records any policy exception as agent_error; the rollout service maps this one to its reason.
    """

    def __init__(self, termination_reason: str, message: str) -> None:
        super().__init__(message)
        self.termination_reason = termination_reason


@dataclass
class HarnessConfig:
    system_prompt: str = ""
    """Overrides the default system prompt built from the task's description when not empty."""
    window_turns: int = 12
    """Agent turns kept verbatim in the prompt; older ones are replaced by the state summary."""
    max_context_tokens: int = 8192
    """The model's context: prompt plus `max_new_tokens` must fit, else the window shrinks, else the episode stops."""
    max_new_tokens: int = 256
    """Per-turn generation limit."""
    max_turns: int | None = None
    """Agent steps before the episode ends as max_steps (None: the environment's own cap)."""
    max_consecutive_errors: int = 20
    """Invalid actions in a row before the episode ends as too_many_errors."""
    max_result_chars: int = 4000
    """A tool result longer than this is cut (with a note) before it goes into the prompt."""
    compact_tools: bool = False
    """List the tools as one `name(args)` line each at the end of the system prompt instead of handing their JSON
    schemas to the chat template (training.data.PromptStyle): a small model's context (StoreBench's 29 schemas are
    ~4,800 SmolLM2 tokens, the listing ~450). The sampler of the training recipes prompts the same way."""
    on_text_only: str = "error"
    """Output with no tool call: "error" sends a reminder back as an invalid action, "stop" ends the episode."""
    record_prompt_ids: bool = True
    """Keep each step's prompt token ids (exact ids for on-policy training; costs storage on long runs)."""
    pace_ms: int = 0
    """Minimum wall time per agent step, so spectators can follow fast (scripted) agents live."""

    def __post_init__(self) -> None:
        problems = []
        if self.window_turns < 1:
            problems.append(f"window_turns must be at least 1, got {self.window_turns}")
        if self.max_new_tokens < 1 or self.max_new_tokens >= self.max_context_tokens:
            problems.append(f"max_new_tokens {self.max_new_tokens} must be in [1, max_context_tokens={self.max_context_tokens})")
        if self.max_turns is not None and self.max_turns < 1:
            problems.append(f"max_turns must be at least 1, got {self.max_turns}")
        if self.max_consecutive_errors < 1:
            problems.append(f"max_consecutive_errors must be at least 1, got {self.max_consecutive_errors}")
        if self.on_text_only not in ("error", "stop"):
            problems.append(f"on_text_only must be 'error' or 'stop', got {self.on_text_only!r}")
        if not isinstance(self.compact_tools, bool):
            problems.append(f"compact_tools must be true or false, got {self.compact_tools!r}")
        if not 0 <= self.pace_ms <= 60_000:
            problems.append(f"pace_ms must be in [0, 60000], got {self.pace_ms}")
        if problems:
            raise ValueError("harness: " + "; ".join(problems))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> HarnessConfig:
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"harness: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_system_prompt(env: Env) -> str:
    return (
        f"You are an agent acting in the {env.name} environment through tools.\n"
        f"Task: {env.task.description}\n"
        "Act only through tool calls, one or more per turn. Tool results come back as tool messages."
    )


def user_brief(env: Env) -> str:
    """The goal card of the environment's user slot (RoleSlot.brief), else its description; ValueError without a slot."""
    slot = next((slot for slot in env_meta(env.name).roles if slot.name == USER), None)
    if slot is None:
        raise ValueError(f"role: {env.name} declares no {USER!r} role slot, so a model cannot play its user")
    return slot.brief(env) if slot.brief is not None else slot.description


def step_seed(seed: int, index: int) -> int:
    """A sampling seed per (episode seed, step index): the same history always samples the same way,
    so a resumed episode continues exactly as the uninterrupted one would have."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{index}".encode()).digest()[:4], "big")


def _content_text(content: Any, limit: int) -> str:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    if len(text) > limit:
        text = text[:limit] + f"... [cut: {len(text) - limit} more characters]"
    return text


def _agent_turn(step: Step, limit: int) -> list[dict[str, Any]]:
    """One agent step as chat messages. An invalid action is shown as the model wrote it, then its error."""
    meta = step.get("meta") or {}
    if meta.get("invalid_action"):
        raw = meta.get("raw_output", step.get("message") or "")
        return [{"role": "assistant", "content": raw}, {"role": "user", "content": f"Error: {meta['invalid_action']}"}]
    calls = step.get("tool_calls") or []
    assistant: dict[str, Any] = {"role": "assistant", "content": step.get("message") or ""}
    if calls:
        assistant["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)},
            }
            for c in calls
        ]
    messages = [assistant]
    for result in step.get("results") or []:
        if result.get("call_id") == "invalid":
            messages.append({"role": "user", "content": f"Error: {_content_text(result.get('content'), limit)}"})
        else:
            messages.append({"role": "tool", "tool_call_id": result["call_id"], "content": _content_text(result.get("content"), limit)})
    return messages


def build_messages(
    history: list[Step],
    *,
    system_prompt: str,
    window_turns: int,
    summary: str = "",
    max_result_chars: int = 4000,
    status: str = "",
) -> list[dict[str, Any]]:
    """Chat messages for the next turn: system, opening observation, a note for dropped turns, the last turns,
    and the environment's status line (clock, budget) when it has one. Turns of other roles (critic advice,
    harness decisions, a consultant's answer) are user messages marked with the role (policies/roles.py).

    The status line is part of the prompt only, never of the recorded steps, so records and their replay are
    the same with or without it."""
    opening, rest = history[0], history[1:]
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": opening.get("message") or ""}]
    turns: list[list[dict[str, Any]]] = []
    for step, shown in zip(rest, context_messages(rest, max_result_chars), strict=True):
        if is_actor_turn(step):
            turns.append(_agent_turn(step, max_result_chars))
        elif shown is not None:  # another role's turn, marked as such: never one of the actor's assistant turns
            turns.append([shown])
    dropped = max(0, len(turns) - window_turns)
    if dropped:
        messages.append(omission_note(dropped, summary))
    for turn in turns[dropped:]:
        messages.extend(turn)
    if status:
        messages.append({"role": "user", "content": f"Status: {status}"})
    return messages


@dataclass
class Completion:
    """One model answer. `tool_calls` None means "parse them out of `text`" (Hermes/Qwen markup)."""

    text: str
    tool_calls: list[ToolCall] | None = None
    error: str | None = None
    reasoning: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class LLMPolicy(Policy):
    """A model-backed policy: the harness builds the prompt and turns the completion into an Action.

    Subclasses implement `count_prompt_tokens` and `complete`. `env` is kept only for its description and
    state summary (what a harness may show the model); the policy never reads hidden state.

    `role` (policies/roles.py) chooses what the model is asked: "actor" acts through the tools; "critic" reads
    the trajectory so far and answers Action(message=advice) with its token ids and logprobs, no tool calls;
    "consultant" is prompted like the actor (less the runner's own tools) and answers the action it suggests;
    "user" plays the environment's user slot: its system prompt is the slot's goal card (RoleSlot.brief), it
    sees the conversation from the user's side, and writes "NOTE: ...\nSAY: ..." of which the note is kept as
    the step's reasoning (never shown to the agent: policies/roles.py) and only what it says is its message.
    """

    def __init__(
        self,
        *,
        env: Env,
        seed: int,
        name: str,
        model: str,
        sampling: dict[str, Any] | None = None,
        harness: HarnessConfig | None = None,
        role: str = ACTOR,
    ) -> None:
        if role not in LLM_ROLES:
            raise ValueError(f"role: {role!r} is not a role an LLM policy can take; use one of {', '.join(LLM_ROLES)}")
        self.env = env
        self.seed = seed
        self.name = name
        self.model = model
        self.role = role
        self.sampling = dict(sampling or {})
        self.harness = harness or HarnessConfig()
        if role == USER:
            self.system_prompt = self.harness.system_prompt or user_brief(env)
        else:
            self.system_prompt = self.harness.system_prompt or default_system_prompt(env)
        if role == CONSULTANT:
            self.system_prompt = f"{self.system_prompt}\n\n{CONSULTANT_INSTRUCTION}"
        self.context: dict[str, Any] = {}  # what the last prompt omitted to fit (fit_messages)

    @abstractmethod
    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int: ...

    @abstractmethod
    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion: ...

    def describe(self) -> dict[str, Any]:
        safe_sampling = {k: v for k, v in self.sampling.items() if "key" not in k.lower()}
        described = {"name": self.name, "kind": self.kind, "model": self.model, "sampling": safe_sampling, "seed": self.seed}
        return described if self.role == ACTOR else {**described, "role": self.role}

    def render(
        self, history: list[Step], *, window_turns: int, summary: str, status: str, system_prompt: str | None = None
    ) -> list[dict[str, Any]]:
        """The prompt of this policy's role for the next turn, keeping the last `window_turns` turns; `system_prompt`
        replaces the policy's own for this prompt (its own plus the compact tool listing)."""
        system = self.system_prompt if system_prompt is None else system_prompt
        if self.role == CRITIC:
            return critic_messages(
                history, system_prompt=system, window_turns=window_turns, max_result_chars=self.harness.max_result_chars, summary=summary
            )
        if self.role == USER:
            return user_messages(history, system_prompt=system, window_turns=window_turns, max_result_chars=self.harness.max_result_chars)
        return build_messages(
            history,
            system_prompt=system,
            window_turns=window_turns,
            summary=summary,
            max_result_chars=self.harness.max_result_chars,
            status=status,
        )

    def fit_messages(self, history: list[Step], tools: list[dict[str, Any]], *, system_prompt: str | None = None) -> list[dict[str, Any]]:
        """The last `window_turns` turns, fewer when the prompt would leave no room for `max_new_tokens` (the one
        truncation rule, training.context: oldest turns first, a marker note in their place, never the system prompt
        or the task). Sets `self.context` to what was omitted, which the step records as `meta.context`."""
        budget = self.harness.max_context_tokens - self.harness.max_new_tokens
        summary, status = self.env.summary(), self.env.status_line()
        messages = self.render(history, window_turns=self.harness.window_turns, summary=summary, status=status, system_prompt=system_prompt)
        last: list[Any] = [None, 0]  # the last prompt counted and its tokens: the final check must not count it again

        def tokens(candidate: list[dict[str, Any]]) -> int:
            if last[0] is not candidate:
                last[:] = [candidate, self.count_prompt_tokens(candidate, tools)]
            return int(last[1])

        def fits(candidate: list[dict[str, Any]]) -> bool:
            return tokens(candidate) <= budget

        if self.role == ACTOR:
            messages, omitted = truncate_messages(messages, fits=fits, summary=summary)
        else:  # a critic's or user's transcript has no assistant turns of its own: its window halves instead
            window, omitted = self.harness.window_turns, 0
            while not fits(messages) and window > 1:
                window = max(1, window // 2)
                messages = self.render(history, window_turns=window, summary=summary, status=status, system_prompt=system_prompt)
        if not fits(messages):
            raise HarnessStop(
                "context_window_exceeded", f"the prompt needs {tokens(messages)} tokens with one turn kept; the budget is {budget}"
            )
        self.context = {"omitted_turns": omitted, "prompt_tokens": tokens(messages), "budget": budget}
        return messages

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        # The critic writes advice and a user speaks, so they see no tools; a consultant suggests an environment
        # action, never a runner tool.
        offered = [] if self.role in (CRITIC, USER) else [t for t in tools if self.role == ACTOR or t.name not in RUNNER_TOOLS]
        schemas = [t.openai_schema() for t in offered]
        index = len(history)
        system = None
        if self.harness.compact_tools and schemas:  # listed in the system prompt; the template gets none
            system, schemas = f"{self.system_prompt}\n{compact_tool_listing(schemas)}", []
        messages = self.fit_messages(history, schemas, system_prompt=system)
        completion = self.complete(messages, schemas, seed=step_seed(int(self.sampling.get("seed", self.seed)), index))
        if self.context.get("omitted_turns"):  # recorded where it happened, so a reader sees what the model was shown
            completion.meta["context"] = dict(self.context)
        return self.to_action(completion, index)

    def to_action(self, completion: Completion, index: int) -> Action:
        tokens: dict[str, Any] = {"token_ids": completion.token_ids, "logprobs": completion.logprobs}
        if self.harness.record_prompt_ids:
            tokens["prompt_token_ids"] = completion.prompt_token_ids
        meta = dict(completion.meta)
        if self.role == CRITIC:  # advice is free text: nothing to parse, nothing is an invalid action
            return Action(message=completion.text.strip() or None, reasoning=completion.reasoning, meta=meta, **tokens)
        if self.role == USER:  # the note is private (Action.reasoning); what the user says is its message
            note, said = parse_user_turn(completion.text)
            return Action(message=said, reasoning=note, meta=meta, **tokens)
        if completion.tool_calls is None:
            parsed = parse_tool_calls(completion.text, id_prefix=f"call_{index}_")
            calls, message, error = parsed.tool_calls, parsed.message, parsed.error
        else:
            calls, message, error = completion.tool_calls, completion.text.strip(), completion.error
        if error is None and not calls:
            if self.harness.on_text_only == "stop":
                return Action(message=message or None, reasoning=completion.reasoning, stop=True, meta=meta, **tokens)
            error = "no tool call found; act by calling one of the tools"
        if error is not None:
            meta["raw_output"] = completion.text
            return Action(tool_calls=calls, message=message or None, reasoning=completion.reasoning, error=error, meta=meta, **tokens)
        return Action(tool_calls=calls, message=message or None, reasoning=completion.reasoning, meta=meta, **tokens)
