"""Parse Hermes/Qwen-style tool calls out of model text: the one parser every local policy and recipe uses.

    parsed = parse_tool_calls('I will look.<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call>')
    parsed.tool_calls == [ToolCall(name="lookup", arguments={"item": "lamp"}, id="call_0")]; parsed.error is None

Malformed output never raises: it comes back with `error` set (a message for the model, as a real harness
answers) and whatever calls did parse. Arguments given as a JSON string are decoded once. A block may hold one call
object or a JSON list of them (SmolLM2's convention).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from environments.core import ToolCall

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_CALL_RE = re.compile(re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE), re.DOTALL)


@dataclass
class ParsedOutput:
    message: str  # the text outside tool-call blocks, stripped
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None


def parse_tool_calls(text: str, *, id_prefix: str = "call_") -> ParsedOutput:
    """Split model output into a message and tool calls; `error` names the first problem found."""
    calls: list[ToolCall] = []
    errors: list[str] = []
    bodies = [body for match in _CALL_RE.finditer(text) for body in _bodies(match.group(1).strip())]
    for number, body in enumerate(bodies):
        call, error = _parse_one(body, f"{id_prefix}{number}")
        if call is not None:
            calls.append(call)
        if error:
            errors.append(error)
    outside = _CALL_RE.sub("", text)
    if CALL_OPEN in outside:
        errors.append(f"{CALL_OPEN} was opened but never closed with {CALL_CLOSE}")
        outside = outside.split(CALL_OPEN)[0]
    return ParsedOutput(message=outside.strip(), tool_calls=calls, error="; ".join(errors) or None)


def _bodies(block: str) -> list[Any]:
    """The calls of one block: a JSON object, or a JSON list of them (SmolLM2's function-calling convention writes
    `<tool_call>[{...}, {...}]</tool_call>`); text that is not JSON is returned as is, for _parse_one's error."""
    try:
        payload = json.loads(block)
    except json.JSONDecodeError:
        return [block]
    if isinstance(payload, list):
        return payload or [block]
    return [payload]


def _parse_one(body: Any, call_id: str) -> tuple[ToolCall | None, str | None]:
    if isinstance(body, str):
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as exc:
            return None, f"tool call is not valid JSON ({exc.msg} at character {exc.pos}): {body[:80]!r}"
    else:
        payload, body = body, json.dumps(body, ensure_ascii=False)
    if not isinstance(payload, dict):
        return None, f"tool call must be a JSON object with name and arguments, got {body[:80]!r}"
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        return None, f"tool call needs a non-empty string 'name', got {name!r}"
    arguments: Any = payload.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None, f"arguments of {name!r} are a string that is not JSON: {arguments[:80]!r}"
    if not isinstance(arguments, dict):
        return None, f"arguments of {name!r} must be a JSON object, got {json.dumps(arguments)[:80]}"
    return ToolCall(name=name, arguments=arguments, id=call_id), None


def render_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """The text the tiny chat template writes for one call (and what a model is trained to emit)."""
    return f'{CALL_OPEN}{{"name": "{name}", "arguments": {json.dumps(arguments, ensure_ascii=False)}}}{CALL_CLOSE}'
