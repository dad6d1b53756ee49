"""Fitting a conversation into a model's context: the one history-truncation rule, at inference and in training.

    messages, dropped = truncate_messages(messages, fits=lambda m: count(m) <= budget, summary=env.summary())

A conversation is a head (the system prompt and the task's opening turn, never dropped) and then turns: an
assistant message with what answered it (tool results, an error, another role's marked message). When the whole
does not fit, the oldest turns go first, whole, and one marker note stands where they were, saying how many turns
are omitted and, when the environment has one, its state summary; a note already there is replaced by one that
counts every omitted turn. The newest `min_turns` turns are always kept: if they alone do not fit, the caller
ends the episode (context_window_exceeded) rather than cut a turn in half.

`compact_tool_listing` is the other half of fitting a small context: the tools as one `name(args)` line each.

Both paths that prompt a model use it: the harness of a local or served policy (training/policies/harness.py)
and the sampler of the training recipes (training/sampling.py), whose records note the truncation on the step
(`meta.context`), so a reader of a trajectory sees what the model was shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

HEAD = 2  # the system prompt and the task's opening turn
_NOTE = re.compile(r"^\[(\d+) earlier turns are omitted to fit the context window\.\]")


def omission_note(dropped: int, summary: str = "") -> dict[str, Any]:
    """The marker that stands for `dropped` omitted turns (a user turn: every chat template has that role)."""
    note = f"[{dropped} earlier turns are omitted to fit the context window.]"
    return {"role": "user", "content": f"{note} Current state: {summary}" if summary else note}


def omitted_count(message: dict[str, Any]) -> int | None:
    """How many turns a marker note stands for, or None when `message` is not one."""
    content = message.get("content")
    match = _NOTE.match(content) if isinstance(content, str) else None
    return int(match.group(1)) if match else None


def split_turns(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, list[list[dict[str, Any]]]]:
    """(head, turns already omitted, turns): each turn starts at an assistant message; messages before the first
    assistant message after the head (a note, a status line) belong to no turn and are returned as omitted count."""
    head = messages[:HEAD]
    omitted = 0
    turns: list[list[dict[str, Any]]] = []
    for message in messages[HEAD:]:
        count = omitted_count(message)
        if count is not None:
            omitted += count
            continue
        if message.get("role") == "assistant" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return head, omitted, turns


def truncate_messages(
    messages: list[dict[str, Any]],
    *,
    fits: Callable[[list[dict[str, Any]]], bool],
    summary: str = "",
    min_turns: int = 1,
    max_turns: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The longest suffix of turns (at most `max_turns`, at least `min_turns`) that `fits`, behind the head and one
    marker note; returns (messages, turns omitted in all, counting a note already present). When even `min_turns`
    turns do not fit, returns that shortest form: the caller checks `fits` again and stops the episode."""
    head, omitted, turns = split_turns(messages)
    keep = len(turns) if max_turns is None else min(len(turns), max_turns)

    def shown(kept: int) -> list[dict[str, Any]]:
        dropped = omitted + len(turns) - kept
        note = [omission_note(dropped, summary)] if dropped else []
        return [*head, *note, *(m for turn in turns[len(turns) - kept :] for m in turn)]

    candidate = shown(keep)
    if not omitted and keep == len(turns) and fits(candidate):
        return messages, 0  # untouched: the common case costs one check
    while keep > min_turns and not fits(candidate):
        keep -= 1
        candidate = shown(keep)
    return candidate, omitted + len(turns) - keep


def compact_tool_listing(tools: list[dict[str, Any]]) -> str:
    """One line per tool, `name(arg, arg?)`: what a small context can afford instead of full JSON schemas."""
    lines = []
    for tool in tools:
        function = tool.get("function", tool)
        params = function.get("parameters") or {}
        required = set(params.get("required") or [])
        args = ", ".join(name if name in required else f"{name}?" for name in params.get("properties") or {})
        lines.append(f"{function['name']}({args})")
    return 'Tools (call one as <tool_call>{"name": ..., "arguments": {...}}</tool_call>):\n' + "\n".join(lines)
