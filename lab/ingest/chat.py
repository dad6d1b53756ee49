"""Chat transcripts to canonical steps: the part shared by the OpenAI, tau-bench, tau2, inspect and ShareGPT importers.

A tool result joins the step that made the call (the canonical record keeps a decision and its outcome
together). A conversation that could not have happened is refused, naming the message: a tool result that
answers no earlier tool call (or comes before any), a call answered twice, a call id used again while its
first call is unanswered. Storing it would only hand an invalid conversation to training later.
"""

from __future__ import annotations

from typing import Any

from environments.records import Step
from environments.trajectory import make_step
from lab.ingest.documents import DocumentError, find_problem, loads_strict
from lab.ingest.reader import Reader, RecordContext, drop_none

ROLE_SOURCES = {"system": "system", "developer": "system", "user": "user", "assistant": "agent"}


class StepList:
    """Steps being built for one record; `ctx` is the record's, so an impossible turn fails with its path.

    A call id may come back in a later turn once its call is answered (local models number calls per turn:
    call_0, call_1, ...); a result then answers the latest call with that id, as in the Chat Completions API.
    """

    def __init__(self, ctx: RecordContext) -> None:
        self.ctx = ctx
        self.steps: list[Step] = []
        self._open: dict[str, str] = {}  # id of a call made and not yet answered -> where it was made
        self._answered: dict[str, str] = {}  # call id -> where its latest call was answered
        self._any_call = False

    def add(
        self,
        source: str,
        *,
        message: Any = None,
        meta: dict[str, Any] | None = None,
        path: str = "",
        result_paths: list[str] | None = None,
        **fields: Any,
    ) -> Step:
        """Append a step; `path` locates its message in the upload (and `result_paths` its results) for errors."""
        for j, call in enumerate(fields.get("tool_calls") or []):
            here = f"{path}.tool_calls[{j}]" if path else f"steps[{len(self.steps)}].tool_calls[{j}]"
            if call["id"] in self._open:
                self.ctx.fail(here, f"tool call id {call['id']!r} is used twice (first at {self._open[call['id']]}, still unanswered)")
            self._open[call["id"]] = here
            self._answered.pop(call["id"], None)
            self._any_call = True
        step = make_step(index=len(self.steps), source=source, message=message, **fields)
        if meta:
            step["meta"] = meta
        self.steps.append(step)
        where = path or f"steps[{step['index']}]"
        for k, result in enumerate(step["results"]):  # results given with their step (ATIF): each answers one call once
            self._mark_answered(result["call_id"], result_paths[k] if result_paths else f"{where}.results[{k}]")
        return step

    def answer(
        self, call_id: str | None, content: Any, *, is_error: bool = False, name: str | None = None, path: str = "", **extra: Any
    ) -> None:
        """Attach a tool result to the step whose call it answers (by id, else the first unanswered call).

        `path` is the tool message's place in the upload; a result that answers no earlier call is refused there.
        """
        result = {"call_id": call_id or "", "content": content, "is_error": is_error, **drop_none(extra)}
        for step in reversed(self.steps):
            ids = [call["id"] for call in step["tool_calls"]]
            if call_id and call_id in ids:
                self._mark_answered(call_id, path)
                step["results"].append(result)
                return
            if not call_id and ids:
                waiting = [c for c in step["tool_calls"] if c["id"] in self._open and (name is None or c["name"] == name)]
                if waiting:
                    result["call_id"] = waiting[0]["id"]
                    self._mark_answered(waiting[0]["id"], path)
                    step["results"].append(result)
                    return
                break
        if call_id:
            self.ctx.fail(path, f"a tool result for call id {call_id!r}, which no earlier message made: it answers no tool call")
        if not self._any_call:
            self.ctx.fail(path, "a tool result before any tool call: it answers no tool call")
        self.ctx.fail(path, "a tool result without a call id while no tool call is waiting for one: it answers no tool call")

    def _mark_answered(self, call_id: str, path: str) -> None:
        if call_id not in self._open:
            self.ctx.fail(path, f"tool call {call_id!r} is answered twice (first at {self._answered.get(call_id, '?')})")
        del self._open[call_id]
        self._answered[call_id] = path


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
            steps.answer(call_id, content, is_error=is_error, name=name if role == "function" else None, path=message.path)
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
            steps.add(ROLE_SOURCES[role], message=content, reasoning=reasoning, tool_calls=calls, meta=meta, path=message.path)
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
