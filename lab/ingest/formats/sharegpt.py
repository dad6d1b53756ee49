"""ShareGPT conversations `{conversations: [{from, value}], system?, tools?}`, as LLaMA-Factory reads them.

`function_call` turns hold `{"name", "arguments"}` JSON (or a list of them); `observation` turns answer
them in order. `tools` is a JSON string (or list) of function schemas.
"""

from __future__ import annotations

from typing import Any

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.chat import StepList, openai_tools, parse_arguments, parse_json_text
from lab.ingest.common import upload_header
from lab.ingest.reader import Reader, RecordContext

NAME = "sharegpt"
# The documented tags, plus the role names some exporters write instead.
SPEAKERS = {"human": "user", "user": "user", "gpt": "agent", "assistant": "agent", "system": "system"}


def matches(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("conversations"), list)


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    record = Reader(raw, origin, ctx)
    steps = StepList(ctx)
    system = record.get("system", "string")
    if system:
        steps.add("system", message=system)
    for i, value in enumerate(record.array("conversations", required=True)):
        turn = Reader(value, f"{record.at('conversations')}[{i}]", ctx)
        speaker = turn.text("from", required=True)
        text = turn.get("value", "string|null", required=True)
        if speaker in SPEAKERS:
            steps.add(SPEAKERS[speaker], message=text)
        elif speaker == "function_call":
            steps.add("agent", tool_calls=_calls(text, turn.at("value"), ctx, len(steps.steps)), path=turn.path)
        elif speaker in ("observation", "tool"):
            steps.answer(None, text, path=turn.path)
        else:
            ctx.fail(turn.at("from"), f"unknown speaker {speaker!r}; expected human, gpt, system, function_call or observation")
        turn.done()
    tools = record.get("tools", "string|array", default=[])
    if isinstance(tools, str):
        parsed = parse_json_text(tools) if tools.strip() else []
        if isinstance(parsed, dict):
            parsed = [parsed]
        if not isinstance(parsed, list):
            ctx.fail(record.at("tools"), "expected a JSON list of function schemas")
        tools = parsed
    header = upload_header(
        fmt=NAME, env="sharegpt", task=record.get("id", "string|integer"), tools=openai_tools(tools, record.at("tools"), ctx)
    )
    record.done()
    return new_record(header=header, steps=steps.steps)


def _calls(text: str | None, path: str, ctx: RecordContext, step_index: int) -> list[dict[str, Any]]:
    parsed = parse_json_text(text or "")
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = []
    for j, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            ctx.fail(path, 'a function_call turn holds JSON {"name": ..., "arguments": ...} (or a list of them)')
        calls.append({"id": f"call_{step_index}_{j}", "name": item["name"], "arguments": parse_arguments(item.get("arguments", {}))})
    return calls
