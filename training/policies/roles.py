"""How the steps of other roles appear in a model's prompt, and the prompts of the critic and the consultant.

    message = context_message(step)              # a critic/harness/consultant step in the actor's context, or None
    messages = critic_messages(history, system_prompt=..., window_turns=12)   # the critic's own prompt

The actor never sees another role's turn as one of its own assistant turns (its assistant masks must cover
only its tokens): critic advice, harness decisions (tracker, hints, verification and stop checks) and a
workflow role's output come in as clearly marked user messages ("Critic: ..."). A consultant's answer reaches
the actor as the result of its own `consult` call; the consultant's step is shown only when no such result
carries it (and likewise a critic's advice already returned to an `ask_critic` call is not shown twice).

The critic sees the trajectory so far as a plain transcript and is asked for brief advice; the consultant is
prompted like the actor (the same history and tools, less the runner's own tools) and answers with the action
it suggests. data.py and role_views.py render records with these same functions, so training and sampling see
the same prompts.
"""

from __future__ import annotations

import json
from typing import Any

from environments.records import Step
from environments.roles import ACTOR, ASK_CRITIC, CONSULT, CONSULTANT, CRITIC, USER, step_role

LLM_ROLES = (ACTOR, CRITIC, CONSULTANT, USER)
"""Roles an LLM policy can take: critic mode writes advice, the actor and consultant modes answer tool calls,
user mode plays the environment's user slot (a private note, then what it says)."""

# The runner tool whose result already carries a role's turn, when the actor asked for it.
_ANSWERED_BY = {CRITIC: ASK_CRITIC, CONSULTANT: CONSULT}

CRITIC_INSTRUCTION = (
    "You are the critic. Another model, the actor, acts in this environment through tools; you never act. "
    "Read its trajectory so far and give it brief advice: what it is missing, what to check, what to do next."
)
CRITIC_REQUEST = "Give the actor brief advice for its next steps (a few sentences, no tool calls)."
CONSULTANT_INSTRUCTION = (
    "You are the consultant. The actor asked for your help: answer with the single next action you suggest, as tool "
    "calls, and your reasoning in a sentence. Your calls are not executed; the actor sees them and decides."
)


USER_INSTRUCTION = (
    "You are the user in this conversation; the other party is the service agent. Stay in your persona and follow "
    "your goal card. Before each reply write a private note (what you want now, what you will reveal, how you "
    "behave); the agent never sees it. Answer in exactly this form:\nNOTE: <your private note>\nSAY: <what you say>"
)
_NOTE, _SAY = "NOTE:", "SAY:"


def _text(content: Any, limit: int = 0) -> str:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return text if not limit or len(text) <= limit else text[:limit] + f"... [cut: {len(text) - limit} more characters]"


def role_label(role: str) -> str:
    return role.replace("_", " ").replace("-", " ").capitalize()


def _answered(previous_actor: Step | None, role: str) -> bool:
    """True when the actor's last step called the runner tool answering `role` and got a result for it."""
    tool = _ANSWERED_BY.get(role)
    if previous_actor is None or tool is None:
        return False
    ids = {c.get("id") for c in previous_actor.get("tool_calls") or [] if c.get("name") == tool}
    return any(r.get("call_id") in ids for r in previous_actor.get("results") or [])


def step_text(step: Step, limit: int = 0) -> str:
    """A role step's visible content: its message, else its suggested calls (a consultant), else its reasoning.
    A user step shows its message only: a model user's reasoning is its private note."""
    if step.get("message") or step_role(step) == USER:
        return _text(step.get("message") or "", limit)
    calls = step.get("tool_calls") or []
    if calls:
        shown = "; ".join(f"{c['name']}({_text(c.get('arguments') or {})})" for c in calls)
        return f"suggested {shown}" + (f" because {step['reasoning']}" if step.get("reasoning") else "")
    return _text(step.get("reasoning") or "", limit)


def is_actor_turn(step: Step, sources: tuple[str, ...] = ("agent",)) -> bool:
    return step.get("source") in sources and step_role(step) == ACTOR


def context_messages(steps: list[Step], limit: int = 0, sources: tuple[str, ...] = ("agent",)) -> list[dict[str, Any] | None]:
    """For each step that is not the actor's own turn: the user message it becomes in the actor's context, or
    None when it is not shown (nothing to say, or already the result of the actor's `ask_critic`/`consult`).
    Entries for the actor's own steps are None as well; callers render those as assistant turns."""
    out: list[dict[str, Any] | None] = []
    previous_actor: Step | None = None
    for step in steps:
        role = step_role(step)
        if is_actor_turn(step, sources):
            previous_actor = step
            out.append(None)
            continue
        text = step_text(step, limit) if role not in ("env", ACTOR) else _text(step.get("message") or "", limit)
        if not text or _answered(previous_actor, role):
            out.append(None)
        elif role in ("env", ACTOR, USER):  # the environment and the user speak for themselves
            out.append({"role": "system" if step.get("source") == "system" else "user", "content": text})
        else:
            out.append({"role": "user", "content": f"{role_label(role)}: {text}"})
    return out


def transcript_lines(history: list[Step], limit: int = 0) -> list[str]:
    """The trajectory as plain lines, one per turn or result, each led by who spoke (the critic's view)."""
    lines: list[str] = []
    for step in history:
        role = step_role(step)
        if role == "env":
            lines.append(f"Environment: {_text(step.get('message') or '', limit)}")
            continue
        if role == ACTOR:
            if step.get("message"):
                lines.append(f"Actor: {_text(step['message'], limit)}")
            for call in step.get("tool_calls") or []:
                lines.append(f"Actor calls {call['name']}({_text(call.get('arguments') or {})})")
            for result in step.get("results") or []:
                mark = "error" if result.get("is_error") else "result"
                lines.append(f"Tool {mark}: {_text(result.get('content'), limit)}")
            continue
        text = step_text(step, limit)
        if text:
            lines.append(f"{role_label(role)}: {text}")
    return lines


def critic_messages(
    history: list[Step], *, system_prompt: str, window_turns: int, max_result_chars: int = 0, summary: str = ""
) -> list[dict[str, Any]]:
    """The critic's prompt: the task, its instruction, the transcript of the last `window_turns` steps after the
    opening observation (older ones replaced by a note and the state summary), and the request for advice."""
    opening, rest = history[:1], history[1:]
    dropped = max(0, len(rest) - window_turns)
    lines = transcript_lines(opening, max_result_chars)
    if dropped:
        note = f"[{dropped} earlier steps are omitted.]"
        lines.append(f"{note} Current state: {summary}" if summary else note)
    lines.extend(transcript_lines(rest[dropped:], max_result_chars))
    transcript = "\n".join(lines)
    return [
        {"role": "system", "content": f"{system_prompt}\n\n{CRITIC_INSTRUCTION}" if system_prompt else CRITIC_INSTRUCTION},
        {"role": "user", "content": f"The trajectory so far:\n{transcript}\n\n{CRITIC_REQUEST}"},
    ]


def parse_user_turn(text: str) -> tuple[str | None, str]:
    """(private note, what the user says) from a model user's "NOTE: ...\nSAY: ..." output. Without a SAY marker
    a text that opens with NOTE is all note (the user says nothing rather than leak it); other text is all said."""
    body = text.strip()
    if _SAY in body:
        head, _, said = body.partition(_SAY)
        note = head.strip().removeprefix(_NOTE).strip()
        return note or None, said.strip()
    if body.startswith(_NOTE):
        return body.removeprefix(_NOTE).strip() or None, ""
    return None, body


def user_turn_text(step: Step) -> str:
    """A user's own turn as it wrote it (its note and what it said): its assistant turn in its own view."""
    said = _text(step.get("message") or "")
    return f"{_NOTE} {step['reasoning']}\n{_SAY} {said}" if step.get("reasoning") else said


def user_messages(
    history: list[Step], *, system_prompt: str, window_turns: int, max_result_chars: int = 0, role: str = USER
) -> list[dict[str, Any]]:
    """The user's prompt: its goal card and instruction, then the conversation from its side, the actor's messages
    as the other party's turns and its own earlier turns (notes included) as its assistant turns. It sees neither
    the environment's observations, nor the actor's tool calls and results, nor the other roles' turns."""
    turns: list[dict[str, Any]] = []
    for step in history:
        speaker = step_role(step)
        if speaker == ACTOR and step.get("message"):
            turns.append({"role": "user", "content": _text(step["message"], max_result_chars)})
        elif speaker == role:
            turns.append({"role": "assistant", "content": user_turn_text(step)})
    system = f"{system_prompt}\n\n{USER_INSTRUCTION}" if system_prompt else USER_INSTRUCTION
    return [{"role": "system", "content": system}, *turns[max(0, len(turns) - 2 * window_turns) :]]
