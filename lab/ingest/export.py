"""Exporters: the canonical record back out, natively or as one OpenAI chat record for training.

`import_payload(json.dumps(export_native(r)))` gives back `export_native(r)` exactly, and an OpenAI export
re-imported as openai and exported again gives the same messages and tool calls.

A canonical record may hold what no chat conversation can: results in a step that made no call (an
environment's own step, the runner's "invalid" result), calls made by a user. `conversation_problems` names
them; `export_openai` refuses such a record (ConversationError) rather than write an invalid conversation.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from environments.records import Record, Step
from environments.trajectory import make_step, new_record

# Who speaks in the chat a model is trained on: a human expert at the controls acts as the assistant.
ROLES = {"system": "system", "user": "user", "agent": "assistant", "human": "assistant", "env": "user"}


ASSISTANT_SOURCES = frozenset(source for source, role in ROLES.items() if role == "assistant")


class ConversationError(ValueError):
    """The record has no valid OpenAI chat rendering; `problems` says why, one field path and reason each."""

    code = "invalid_conversation"

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("not a valid chat conversation: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else ""))


def conversation_problems(steps: list[Step]) -> list[str]:
    """Why these canonical steps would export as an invalid chat conversation; [] when they would not.

    In the chat, a step's results follow its own message as tool messages, so each must answer a distinct
    call that this step's assistant message made; only assistant turns (agent, human) make calls.
    """
    problems: list[str] = []
    for position, step in enumerate(steps):
        path = f"steps[{position}]"
        calls = step.get("tool_calls") or []
        assistant = step["source"] in ASSISTANT_SOURCES and step.get("role") != "user"
        if calls and not assistant:
            problems.append(f"{path}.tool_calls: a {step['source']} step makes tool calls; only assistant turns can")
        ids = [call["id"] for call in calls] if assistant else []
        if len(set(ids)) < len(ids):
            problems.append(f"{path}.tool_calls: a call id is used twice in one turn")
        answered: set[str] = set()
        for k, result in enumerate(step.get("results") or []):
            call_id = result["call_id"]
            if call_id not in ids:
                problems.append(f"{path}.results[{k}]: answers call id {call_id!r}, which this step's assistant turn did not make")
            elif call_id in answered:
                problems.append(f"{path}.results[{k}]: answers call id {call_id!r} a second time")
            answered.add(call_id)
    return problems


def export_native(record: Record) -> Record:
    """A deep copy with every step in make_step's full shape (what the lab stores and serves)."""
    steps: list[Step] = [{**make_step(index=step["index"], source=step["source"]), **copy.deepcopy(step)} for step in record["steps"]]
    return new_record(header=copy.deepcopy(record["header"]), steps=steps)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)


def export_openai(record: Record) -> dict[str, Any]:
    """`{"messages", "tools"}`: steps as system/user/assistant messages, results as `tool` messages.

    Arguments become JSON strings as the Chat Completions API sends them; non-text tool results are
    JSON-encoded. An `env` step's message is what the agent observed, so it is a user turn. Raises
    ConversationError for a record whose conversation would be invalid (`conversation_problems`).
    """
    problems = conversation_problems(record["steps"])
    if problems:
        raise ConversationError(problems)
    messages: list[dict[str, Any]] = []
    for step in record["steps"]:
        # A user slot's turn is the user's whoever played it (a human user is not the assistant); its reasoning,
        # a model user's private note, is never exported as anyone's.
        role = "user" if step.get("role") == "user" else ROLES[step["source"]]
        calls = step.get("tool_calls") or []
        if step.get("message") is not None or calls or (role != "user" and not step.get("results")):
            message: dict[str, Any] = {"role": role, "content": step.get("message")}
            if role == "assistant":
                if message["content"] is None and not calls:
                    message["content"] = ""
                if step.get("reasoning"):
                    message["reasoning_content"] = step["reasoning"]
                if calls:
                    message["tool_calls"] = [
                        {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": _text(call["arguments"])}}
                        for call in calls
                    ]
            elif message["content"] is None:
                message["content"] = ""
            messages.append(message)
        for result in step.get("results") or []:
            messages.append({"role": "tool", "tool_call_id": result["call_id"], "content": _text(result["content"])})
    return {"messages": messages, "tools": copy.deepcopy(record["header"].get("tools") or [])}
