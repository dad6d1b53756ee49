"""The recording proxy as an ASGI app: forwards OpenAI-compatible requests upstream, answers with what came back,
and hands each chat completion to the recorder.

- `POST .../chat/completions`: forwarded; the answer (JSON, or a server-sent event stream passed on chunk by chunk
  as it arrives) goes back unchanged, and the request with the assistant message (reassembled from the stream's
  deltas) is recorded. A non-2xx answer is passed through with its status and recorded as an error.
- Anything else (`GET .../models`, embeddings, ...): forwarded and answered, not recorded.
- Headers go upstream as given (the Authorization key included) except hop-by-hop ones and `X-Practicum-*`, which
  are the proxy's own. The key is never read, kept or logged here.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from practicum_client.proxy.recorder import Recorder
from practicum_client.proxy.stream import StreamAssembler

log = logging.getLogger("practicum_client.proxy")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

EPISODE_HEADER = "x-practicum-episode"
MAX_BODY_BYTES = 64 * 1024 * 1024
# Not forwarded: hop-by-hop headers, the length (recomputed), and encodings (httpx decodes, so the proxy sees text).
_REQUEST_DROPPED = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                              "proxy-authorization", "proxy-connection", "accept-encoding"})  # fmt: skip
_RESPONSE_DROPPED = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding", "content-encoding"})


class ProxyApp:
    def __init__(
        self, upstream: str, recorder: Recorder, *, timeout_s: float = 600.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if not upstream.startswith(("http://", "https://")):
            raise ValueError(f"upstream={upstream!r}: must start with http:// or https://")
        self.upstream = upstream.rstrip("/")
        self.recorder = recorder
        self.timeout_s = timeout_s
        self.transport = transport
        self.http: httpx.AsyncClient | None = None

    def target(self, path: str, query: bytes) -> str:
        """`/v1/chat/completions` on the proxy is `<upstream>/chat/completions`: the upstream URL is a base URL
        as a harness would configure it (`https://api.openai.com/v1`)."""
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        return self.upstream + rest + (f"?{query.decode('latin-1')}" if query else "")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self.http is None:  # served without lifespan events
            self.http = httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport)
        body = await _read_body(receive)
        if body is None:
            await _answer(
                send, 413, {"error": {"message": f"practicum proxy: request body over {MAX_BODY_BYTES} bytes", "type": "proxy_error"}}
            )
            return
        headers = [(k, v) for k, v in scope["headers"] if k.decode("latin-1").lower() not in _REQUEST_DROPPED
                   and not k.decode("latin-1").lower().startswith("x-practicum-")]  # fmt: skip
        named = next((v.decode("latin-1").strip() for k, v in scope["headers"] if k.decode("latin-1").lower() == EPISODE_HEADER), "")
        episode = named[:200] or None  # the harness's own id for the conversation, kept in its record
        url = self.target(scope["path"], scope.get("query_string", b""))
        request = _json_object(body) if scope["method"] == "POST" and scope["path"].endswith("/chat/completions") else None
        started = time.monotonic()
        try:
            upstream = self.http.build_request(scope["method"], url, headers=headers, content=body)
            response = await self.http.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            message = f"practicum proxy: the upstream did not answer: {type(exc).__name__}: {exc}"
            if request is not None:
                self.recorder.exchange(request, error={"status": 502, "message": message}, episode=episode)
            await _answer(send, 502, {"error": {"message": message, "type": "proxy_error"}})
            return
        try:
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [(k, v) for k, v in response.headers.raw if k.decode("latin-1").lower() not in _RESPONSE_DROPPED]})  # fmt: skip
            assembler = StreamAssembler()
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            kept = bytearray()
            try:
                async for chunk in response.aiter_bytes():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if request is not None and streamed:
                        assembler.feed(chunk)
                    elif request is not None:
                        kept.extend(chunk)
            except httpx.HTTPError as exc:
                # The upstream broke off mid-answer: recorded, and the harness's connection dropped as the upstream's was.
                if request is not None:
                    message = f"practicum proxy: the upstream broke off: {type(exc).__name__}: {exc}"
                    self.recorder.exchange(request, error={"status": response.status_code, "message": message}, episode=episode)
                raise
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
        if request is not None:
            self._record(request, response.status_code, streamed, assembler, bytes(kept), episode, time.monotonic() - started)

    def _record(self, request: dict[str, Any], status: int, streamed: bool, assembler: StreamAssembler, kept: bytes,
                episode: str | None, latency_s: float) -> None:  # fmt: skip
        call: dict[str, Any] = {"status": status, "stream": streamed, "latency_s": round(latency_s, 4)}
        if not 200 <= status < 300:
            text = kept.decode("utf-8", "replace") if not streamed else assembler.text()
            self.recorder.exchange(request, error={"status": status, "body": text[:4000]}, episode=episode, call=call)
            return
        reply: Any
        if streamed:
            reply, details = assembler.message(), assembler.details()
        else:
            answer = _json_object(kept) or {}
            choices = answer.get("choices") or [{}]
            first = choices[0] if isinstance(choices, list) and isinstance(choices[0], dict) else {}
            reply = first.get("message")
            details = {"finish_reason": first.get("finish_reason"), "usage": answer.get("usage"), "model": answer.get("model"),
                       "id": answer.get("id")}  # fmt: skip
        call.update({k: v for k, v in details.items() if v is not None})
        if not isinstance(reply, dict):
            self.recorder.exchange(
                request, error={"status": status, "body": "no assistant message in the answer"}, episode=episode, call=call
            )
            return
        self.recorder.exchange(request, reply=reply, episode=episode, call=call)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                self.http = httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport)
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                if self.http is not None:
                    await self.http.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _read_body(receive: Receive) -> bytes | None:
    body = bytearray()
    while True:
        event = await receive()
        body.extend(event.get("body", b""))
        if len(body) > MAX_BODY_BYTES:
            return None
        if not event.get("more_body"):
            return bytes(body)


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})
