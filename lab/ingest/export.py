"""Exporters: the canonical record back out, natively or as one OpenAI chat record for training.

`import_payload(json.dumps(export_native(r)))` gives back `export_native(r)` exactly, and an OpenAI export
re-imported as openai and exported again gives the same messages and tool calls.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from environments.trajectory import make_step, new_record

# Who speaks in the chat a model is trained on: a human expert at the controls acts as the assistant.
ROLES = {"system": "system", "user": "user", "agent": "assistant", "human": "assistant", "env": "user"}


def export_native(record: dict[str, Any]) -> dict[str, Any]:
    """A deep copy with every step in make_step's full shape (what the lab stores and serves)."""
    steps = [{**make_step(index=step["index"], source=step["source"]), **copy.deepcopy(step)} for step in record["steps"]]
    return new_record(header=copy.deepcopy(record["header"]), steps=steps)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)


def export_openai(record: dict[str, Any]) -> dict[str, Any]:
    """`{"messages", "tools"}`: steps as system/user/assistant messages, results as `tool` messages.

    Arguments become JSON strings as the Chat Completions API sends them; non-text tool results are
    JSON-encoded. An `env` step's message is what the agent observed, so it is a user turn.
    """
    messages: list[dict[str, Any]] = []
    for step in record["steps"]:
        role = ROLES[step["source"]]
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
