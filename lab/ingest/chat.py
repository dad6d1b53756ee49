"""Chat transcripts to canonical steps: the part shared by the OpenAI, tau-bench, tau2, inspect and ShareGPT importers.

A tool result joins the step that made the call (the canonical record keeps a decision and its outcome
together). A result whose call cannot be found becomes an `env` step of its own, so nothing is dropped.
"""

from __future__ import annotations

from typing import Any

from environments.trajectory import make_step
from lab.ingest.documents import DocumentError, find_problem, loads_strict
from lab.ingest.reader import Reader, RecordContext, drop_none

ROLE_SOURCES = {"system": "system", "developer": "system", "user": "user", "assistant": "agent"}


class StepList:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def add(self, source: str, *, message: Any = None, meta: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        step = make_step(index=len(self.steps), source=source, message=message, **fields)
        if meta:
            step["meta"] = meta
        self.steps.append(step)
        return step

    def answer(self, call_id: str | None, content: Any, *, is_error: bool = False, name: str | None = None, **extra: Any) -> None:
        """Attach a tool result to the step whose call it answers (by id, else the first unanswered call)."""
        result = {"call_id": call_id or "", "content": content, "is_error": is_error, **drop_none(extra)}
        for step in reversed(self.steps):
            ids = [call["id"] for call in step["tool_calls"]]
            if call_id and call_id in ids:
                step["results"].append(result)
                return
            if not call_id and ids:
                answered = {r["call_id"] for r in step["results"]}
                waiting = [c for c in step["tool_calls"] if c["id"] not in answered and (name is None or c["name"] == name)]
                if waiting:
                    result["call_id"] = waiting[0]["id"]
                    step["results"].append(result)
                    return
                break
        self.add("env", results=[result])


def parse_json_text(text: str) -> Any:
    """Strictly parsed JSON text, or None when it is not JSON or holds NaN/Infinity or absurd nesting."""
    try:
        parsed = loads_strict(text)
    except DocumentError:
        return None
    return parsed if find_problem(parsed) is None else None


def parse_arguments(arguments: Any) -> Any:
    """Arguments as an object when they are (or encode) one; the original string when the JSON is broken."""
    if not isinstance(arguments, str):
        return arguments
    parsed = parse_json_text(arguments)
    return parsed if isinstance(parsed, dict) else arguments


def openai_tool_call(value: Any, path: str, ctx: RecordContext, fallback_id: str) -> dict[str, Any]:
    call = Reader(value, path, ctx)
    call.get("type", "string")
    function = call.child("function", required=True)
    assert function is not None
    name = function.text("name", required=True)
    arguments = function.get("arguments", "string|object", default={})
    function.done()
    call_id = call.get("id", "string") or fallback_id
    call.done()
    return {"id": call_id, "name": name, "arguments": parse_arguments(arguments)}


def add_openai_messages(messages: list[Any], path: str, ctx: RecordContext, steps: StepList, *, error_prefix: str | None = None) -> None:
    """OpenAI chat messages onto `steps`. `error_prefix` marks tool results that are errors (tau-bench: "Error:")."""
    for i, value in enumerate(messages):
        message = Reader(value, f"{path}[{i}]", ctx)
        role = message.text("role", required=True)
        content = message.get("content", "string|array|null")
        name = message.get("name", "string")
        if role in ("tool", "function"):
            call_id = message.get("tool_call_id", "string")
            is_error = bool(error_prefix and isinstance(content, str) and content.startswith(error_prefix))
            steps.answer(call_id, content, is_error=is_error, name=name if role == "function" else None)
        elif role in ROLE_SOURCES:
            meta = drop_none({"role": role if role == "developer" else None, "name": name, "refusal": message.get("refusal", "string")})
            calls = []
            if role == "assistant":
                for j, call in enumerate(message.array("tool_calls")):
                    calls.append(openai_tool_call(call, message.at("tool_calls") + f"[{j}]", ctx, f"call_{len(steps.steps)}_{j}"))
                legacy = message.child("function_call")
                if legacy is not None:  # the pre-tools API: one call, answered by a role "function" message
                    fn_name = legacy.text("name", required=True)
                    calls.append(
                        {"id": f"function_call_{len(steps.steps)}", "name": fn_name, "arguments": parse_arguments(legacy.get("arguments"))}
                    )
                    legacy.done()
            elif message.has("tool_calls"):
                ctx.fail(message.at("tool_calls"), f"only assistant messages carry tool calls, this one has role {role!r}")
            reasoning = message.get("reasoning_content", "string") or message.get("reasoning", "string")
            steps.add(ROLE_SOURCES[role], message=content, reasoning=reasoning, tool_calls=calls, meta=meta)
        else:
            ctx.fail(message.at("role"), f"unknown role {role!r}; expected system, developer, user, assistant, tool or function")
        message.done()


def openai_tools(tools: list[Any], path: str, ctx: RecordContext) -> list[dict[str, Any]]:
    """Tool schemas as OpenAI `{type: function, function: {...}}` entries; bare function objects are wrapped."""
    result = []
    for i, tool in enumerate(tools):
        ctx.expect(tool, "object", f"{path}[{i}]")
        if "function" in tool or tool.get("type") == "function":
            result.append(tool)
        elif isinstance(tool.get("name"), str):
            result.append({"type": "function", "function": tool})
        else:
            ctx.fail(f"{path}[{i}]", "a tool needs a name (or a function with one)")
    return result
