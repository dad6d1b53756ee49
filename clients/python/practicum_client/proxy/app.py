"""The recording proxy as an ASGI app: forwards OpenAI-compatible requests upstream, answers with what came back,
and hands each chat completion to the recorder.

- `POST .../chat/completions`: forwarded; the answer (JSON, or a server-sent event stream passed on chunk by chunk
  as it arrives) goes back unchanged, and the request with the assistant message (reassembled from the stream's
  deltas) is recorded. A non-2xx answer is passed through with its status and recorded as an error.
- Anything else (`GET .../models`, embeddings, ...): forwarded and answered, not recorded.
- Every request must carry the proxy's token (`X-Practicum-Proxy-Token: <token>`, or `Authorization: Bearer <token>`
  as an SDK's api_key sends it); without it the answer is 401 and nothing is forwarded.
- Headers go upstream as given except hop-by-hop ones, `X-Practicum-*` (the proxy's own), and the caller's
  `Authorization` and `Cookie`: those stay here unless `forward_credentials` is set. The upstream's key is the
  operator's `upstream_key` when given. Keys are never kept or logged here.
- The path is normalised before it is matched or forwarded (percent-encodings decoded, `.` and empty segments
  dropped), and a path with a `..` segment is refused (400): no request reaches the upstream outside its base path.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

import httpx

from practicum_client.proxy.recorder import Recorder
from practicum_client.proxy.stream import StreamAssembler

log = logging.getLogger("practicum_client.proxy")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

EPISODE_HEADER = "x-practicum-episode"
TOKEN_HEADER = "X-Practicum-Proxy-Token"
_CREDENTIALS = frozenset({"authorization", "cookie"})
MAX_BODY_BYTES = 64 * 1024 * 1024
# Not forwarded: hop-by-hop headers, the length (recomputed), and encodings (httpx decodes, so the proxy sees text).
_REQUEST_DROPPED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "accept-encoding",
    }
)
_RESPONSE_DROPPED = frozenset({"content-length", "connection", "keep-alive", "transfer-encoding", "content-encoding"})


class ProxyApp:
    def __init__(
        self,
        upstream: str,
        recorder: Recorder,
        *,
        token: str,
        upstream_key: str | None = None,
        forward_credentials: bool = False,
        timeout_s: float = 600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """`token`: what every caller must present. `upstream_key`: sent upstream as the bearer key. `forward_credentials`:
        pass the caller's own Authorization and Cookie on (off by default)."""
        if not upstream.startswith(("http://", "https://")):
            raise ValueError(f"upstream={upstream!r}: must start with http:// or https://")
        if not isinstance(token, str) or len(token) < 16:
            raise ValueError("token: the proxy needs a token of at least 16 characters that callers present")
        self.token, self.upstream_key, self.forward_credentials = token, upstream_key, forward_credentials
        self.upstream = upstream.rstrip("/")
        self.recorder = recorder
        self.timeout_s = timeout_s
        self.transport = transport
        self.http: httpx.AsyncClient | None = None

    def authorised(self, headers: list[tuple[bytes, bytes]]) -> bool:
        given = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        offered = [given.get(TOKEN_HEADER.lower(), ""), given.get("authorization", "").removeprefix("Bearer ").strip()]
        return any(hmac.compare_digest(value.encode(), self.token.encode()) for value in offered if value)

    def upstream_headers(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        out = []
        for key, value in headers:
            name = key.decode("latin-1").lower()
            if name in _REQUEST_DROPPED or name.startswith("x-practicum-"):
                continue
            if name in _CREDENTIALS and (not self.forward_credentials or self.upstream_key is not None):
                continue
            if name == "authorization" and value.decode("latin-1").removeprefix("Bearer ").strip() == self.token:
                continue  # the proxy's own token, never passed on
            out.append((key, value))
        if self.upstream_key is not None:
            out.append((b"authorization", f"Bearer {self.upstream_key}".encode("latin-1")))
        return out

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
        if not self.authorised(scope["headers"]):
            await _answer(
                send, 401, {"error": {"message": f"practicum proxy: present the proxy's token ({TOKEN_HEADER})", "type": "proxy_error"}}
            )
            return
        path = normalised_path(scope.get("raw_path") or scope["path"].encode())
        if path is None:
            await _answer(send, 400, {"error": {"message": "practicum proxy: a path with '..' segments is refused", "type": "proxy_error"}})
            return
        headers = self.upstream_headers(scope["headers"])
        named = next((v.decode("latin-1").strip() for k, v in scope["headers"] if k.decode("latin-1").lower() == EPISODE_HEADER), "")
        episode = named[:200] or None  # the harness's own id for the conversation, kept in its record
        url = self.target(path, scope.get("query_string", b""))
        request = _json_object(body) if scope["method"] == "POST" and path.endswith("/chat/completions") else None
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
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": [(k, v) for k, v in response.headers.raw if k.decode("latin-1").lower() not in _RESPONSE_DROPPED],
                }
            )
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

    def _record(
        self,
        request: dict[str, Any],
        status: int,
        streamed: bool,
        assembler: StreamAssembler,
        kept: bytes,
        episode: str | None,
        latency_s: float,
    ) -> None:
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
            details = {
                "finish_reason": first.get("finish_reason"),
                "usage": answer.get("usage"),
                "model": answer.get("model"),
                "id": answer.get("id"),
            }
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


def normalised_path(raw: bytes) -> str | None:
    """The request path with every percent-encoding decoded (repeatedly: `%252e` too) and empty and `.` segments
    dropped; None when it holds a `..` segment (no client of an API needs one; resolved by the upstream's URL handling
    it could leave the base path), a backslash or a NUL."""
    text = raw.decode("latin-1").split("?", 1)[0]
    for _ in range(3):  # double-encoded dots are dots to some servers
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    if "\\" in text or "\x00" in text:
        return None
    parts: list[str] = []
    for segment in text.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            return None
        parts.append(segment)
    return "/" + "/".join(parts)


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
