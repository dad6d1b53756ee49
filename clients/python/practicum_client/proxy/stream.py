"""Reassembling a streamed chat completion (server-sent events of `chat.completion.chunk`s) into the assistant
message it amounts to: content and reasoning concatenated, tool calls gathered by their `index`."""

from __future__ import annotations

import json
from typing import Any

MAX_KEPT_BYTES = 4 * 1024 * 1024  # what an oversized or broken stream may hold in memory for its record


class StreamAssembler:
    def __init__(self) -> None:
        self.pending = b""
        self.raw = bytearray()
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.role = "assistant"
        self.extra: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> None:
        if len(self.raw) < MAX_KEPT_BYTES:
            self.raw.extend(chunk[: MAX_KEPT_BYTES - len(self.raw)])
        self.pending += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self.pending:
            event, self.pending = self.pending.split(b"\n\n", 1)
            data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if data and data.strip() != b"[DONE]":
                self._chunk(data)

    def _chunk(self, data: bytes) -> None:
        try:
            chunk = json.loads(data)
        except ValueError:
            return  # not JSON: the raw text is kept for the record
        if not isinstance(chunk, dict):
            return
        for name in ("id", "model", "usage"):
            if chunk.get(name) is not None:
                self.extra[name] = chunk[name]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1: the first choice is the one a harness continues with
            if choice.get("finish_reason"):
                self.extra["finish_reason"] = choice["finish_reason"]
            delta = choice.get("delta") or {}
            self.role = delta.get("role") or self.role
            if isinstance(delta.get("content"), str):
                self.content.append(delta["content"])
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                self.reasoning.append(reasoning)
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    self._call(call)

    def _call(self, delta: dict[str, Any]) -> None:
        call = self.calls.setdefault(
            int(delta.get("index", len(self.calls))), {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        call["id"] = delta.get("id") or call["id"]
        function = delta.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": self.role, "content": "".join(self.content) if self.content else None}
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        return message

    def details(self) -> dict[str, Any]:
        return dict(self.extra)

    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")
