"""Chat completions seen by the proxy, grouped into conversations, each uploaded as one episode.

Grouping: a request naming `X-Practicum-Episode: <id>` belongs to that id's conversation. Otherwise a request whose
messages begin with a conversation's transcript so far (its last request's messages plus the reply) continues it,
the longest such transcript winning; any other request starts a conversation. Messages are compared by what a
harness echoes back (role, text, tool call ids/names/arguments, tool_call_id), not byte for byte.

A conversation is finished once no request has continued it for `idle_s`, or when the proxy stops; it is then put
in a background sender (practicum_client.reporter) as an OpenAI chat record and uploaded in batches, each batch under
an Idempotency-Key derived from its content, so a batch resent after a lost answer is not stored twice. A request
continuing a conversation that was already uploaded starts a new one (its messages hold the whole exchange).

Nothing here sees request headers other than the episode id: keys are forwarded by the app and never reach a record.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from practicum_client.client import Client
from practicum_client.reporter import Reporter

REQUEST_FIELDS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "tool_choice", "parallel_tool_calls", "seed")
UPLOAD_BATCH = 50


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def message_signature(message: Any) -> str:
    """What identifies a message when a harness sends it back: the proxy's record of a reply and the harness's echo
    of it differ in fields like `refusal`, `annotations` or `type`."""
    if not isinstance(message, dict):
        return json.dumps(message, sort_keys=True, default=str)
    calls = [
        (c.get("id"), (c.get("function") or {}).get("name"), _arguments((c.get("function") or {}).get("arguments")))
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    content = message.get("content") or ""
    return json.dumps([message.get("role"), content, calls, message.get("tool_call_id")], sort_keys=True, default=str)


@dataclass
class Conversation:
    key: str
    transcript: list[dict[str, Any]]
    signatures: list[str]
    request: dict[str, Any]
    """The first request's model, tools and sampling fields."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    last_at: float = 0.0

    def record(self, env: str | None) -> dict[str, Any]:
        record: dict[str, Any] = {
            "messages": self.transcript,
            "metadata": {"recorded_by": "practicum proxy", "conversation": self.key, "calls": self.calls, "errors": self.errors},
        }
        for name in ("model", "tools", *REQUEST_FIELDS):
            if self.request.get(name) is not None:
                record[name] = self.request[name]
        if env:
            record["env"] = env
        return record


class Recorder:
    def __init__(
        self,
        deliver: Callable[[list[dict[str, Any]]], None],
        *,
        idle_s: float = 60.0,
        env: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`deliver(records)` is called with each finished conversation's record (from the proxy's or a timer's thread)."""
        self.deliver = deliver
        self.idle_s = idle_s
        self.env = env
        self.clock = clock
        self.open: dict[str, Conversation] = {}
        self.lock = threading.Lock()

    def exchange(
        self,
        request: dict[str, Any],
        *,
        reply: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        episode: str | None = None,
        call: dict[str, Any] | None = None,
    ) -> str:
        """Record one chat completion: the request body, and the assistant message it got or the error. Returns the
        conversation's key."""
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        signatures = [message_signature(m) for m in messages]
        with self.lock:
            conversation = self.open.get(episode) if episode else self._continued(signatures)
            if conversation is None:
                key = episode or f"conversation-{uuid.uuid4().hex[:16]}"
                conversation = Conversation(key, [], [], {k: v for k, v in request.items() if k != "messages"})
                self.open[key] = conversation
            conversation.transcript = [*messages, reply] if reply is not None else messages
            conversation.signatures = [*signatures, message_signature(reply)] if reply is not None else signatures
            conversation.calls.append({"at_message": len(messages), **(call or {})})
            if error is not None:
                conversation.errors.append({"at_message": len(messages), **error})
            conversation.last_at = self.clock()
            return conversation.key

    def _continued(self, signatures: list[str]) -> Conversation | None:
        best: Conversation | None = None
        for conversation in self.open.values():
            known = conversation.signatures
            continues = known and len(known) <= len(signatures) and signatures[: len(known)] == known
            if continues and (best is None or len(known) > len(best.signatures)):
                best = conversation
        return best

    def close_idle(self, *, everything: bool = False) -> int:
        """Hand over conversations idle for `idle_s` (all of them with `everything`); returns how many."""
        now = self.clock()
        with self.lock:
            done = [c for c in self.open.values() if everything or now - c.last_at >= self.idle_s]
            for conversation in done:
                del self.open[conversation.key]
        if done:
            self.deliver([c.record(self.env) for c in done])
        return len(done)


class Uploader:
    """Finished conversations, uploaded in the background as OpenAI chat records; `put` never waits on the server."""

    def __init__(self, client: Client, *, project: str | None = None, interval_s: float = 2.0) -> None:
        self.client = client
        self.project = project
        self.reporter = Reporter(self._send, interval_s=interval_s)
        self.episode_ids: list[int] = []

    def put(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            self.reporter.put("episode", record)

    def _send(self, kind: str, records: list[dict[str, Any]]) -> None:
        assert kind == "episode", kind
        for start in range(0, len(records), UPLOAD_BATCH):
            chunk = records[start : start + UPLOAD_BATCH]
            # Keyed by content: if the answer is lost the reporter resends the same records, which the server replays.
            digest = hashlib.sha256(json.dumps(chunk, sort_keys=True, default=str).encode()).hexdigest()[:32]
            result = self.client.episodes.upload(chunk, format="openai", project=self.project, session=f"practicum-proxy:{digest}")
            self.episode_ids.extend(i for i in result.episode_ids if i not in self.episode_ids)  # a replayed chunk: once

    def close(self, timeout_s: float = 30.0) -> bool:
        return self.reporter.close(timeout_s)
