"""OpenAI chat records: `{messages, tools?, ...}`, one conversation per record (also a bare message list)."""

from __future__ import annotations

from typing import Any

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.chat import StepList, add_openai_messages, openai_tools
from lab.ingest.common import score_from_reward, upload_header
from lab.ingest.reader import Reader, RecordContext, drop_none

NAME = "openai"
REQUEST_FIELDS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "tool_choice", "parallel_tool_calls", "seed")


def matches(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list)


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    if isinstance(raw, list):  # a bare list of messages is one conversation
        raw = {"messages": raw}
        messages_path = origin
    else:
        messages_path = ""
    record = Reader(raw, origin, ctx)
    steps = StepList(ctx)
    add_openai_messages(record.array("messages", required=True), messages_path or record.at("messages"), ctx, steps)
    reward = record.get("reward", "number")
    metadata = record.get("metadata", "object")
    header = upload_header(
        fmt=NAME,
        env=record.text("env") or "openai-chat",
        task=record.get("task_id", "string|integer") or record.get("task", "string"),
        seed=record.get("seed", "integer"),
        policy=drop_none({"kind": "external", "model": record.get("model", "string")}),
        harness=drop_none({"request": drop_none({key: record.get(key) for key in REQUEST_FIELDS}) or None}),
        tools=openai_tools(record.array("tools"), record.at("tools"), ctx),
        reward=reward,
        score=score_from_reward(reward),
        meta={"metadata": metadata, "id": record.get("id", "string|integer")},
    )
    record.done()
    return new_record(header=header, steps=steps.steps)
