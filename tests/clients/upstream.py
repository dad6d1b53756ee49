"""A loopback stand-in for an OpenAI-compatible model endpoint (an ASGI app), for the recording proxy's tests.

The model is scripted: asked without a tool result it calls `get_weather` on the city in the last user message; with
one it answers from it; a user message containing "explode" gets a 500, and a streamed answer to one containing
"break" stops after its first chunk with the connection dropped. `stream: true` is answered in server-sent
event chunks that split the tool call's arguments and the text across deltas, as real servers do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MODEL = "stub-model"


@dataclass
class Upstream:
    seen: list[dict[str, Any]] = field(default_factory=list)
    """Each request: its path, headers (lower-cased names) and JSON body."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        request = json.loads(body) if body else {}
        self.seen.append({"path": scope["path"], "headers": headers, "body": request})
        if scope["path"] == "/v1/models":
            await _send(send, 200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "stub"}]})
        elif scope["path"] == "/v1/chat/completions":
            await self._chat(request, send)
        else:
            await _send(send, 404, {"error": {"message": f"no {scope['path']}"}})

    async def _chat(self, request: dict[str, Any], send: Any) -> None:
        messages = request["messages"]
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if "explode" in user:
            await _send(send, 500, {"error": {"message": "the model server exploded", "type": "server_error"}})
            return
        result = next((m["content"] for m in reversed(messages) if m["role"] == "tool"), None)
        city = user.rsplit(" ", 1)[-1].strip("?")
        if result is None:
            call = {
                "id": f"call_{len(messages)}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": f"It is {result} in {city}."}, "stop"
        usage = {"prompt_tokens": 10 * len(messages), "completion_tokens": 7, "total_tokens": 10 * len(messages) + 7}
        if not request.get("stream"):
            answer = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": MODEL,
                "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
            await _send(send, 200, answer)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for delta in _deltas(message):
            if "break" in user and delta.get("role") is None:
                raise ConnectionAbortedError("the model server went away mid-answer")  # uvicorn drops the connection
            await _event(
                send,
                {
                    "id": "chatcmpl-2",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": MODEL,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                },
            )
        await _event(
            send,
            {
                "id": "chatcmpl-2",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": MODEL,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        )
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})


def _deltas(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message.get("content"):
        text = message["content"]
        return [{"role": "assistant", "content": text[:5]}, {"content": text[5:]}]
    call = message["tool_calls"][0]
    arguments = call["function"]["arguments"]
    return [
        {
            "role": "assistant",
            "tool_calls": [{"index": 0, "id": call["id"], "type": "function", "function": {"name": "get_weather", "arguments": ""}}],
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": arguments[:6]}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": arguments[6:]}}]},
    ]


async def _event(send: Any, chunk: dict[str, Any]) -> None:
    await send({"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(), "more_body": True})


async def _send(send: Any, status: int, body: dict[str, Any]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
