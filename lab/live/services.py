"""Publishing live events: numbered and stored inside the caller's transaction, sent to clients after commit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer
from django.db import connection, transaction

from lab.live.models import LiveEvent, StreamCounter


def group_name(stream: str) -> str:
    """Channel-layer group names allow only [a-zA-Z0-9._-]."""
    return "live." + stream.replace(":", ".")


def live_publish(*, stream: str, kind: str, payload: Mapping[str, Any]) -> LiveEvent:
    """Store the next event of `stream` and send it to the stream's group once the transaction commits.

    If the transaction rolls back, the event disappears with the change it described and is never sent.
    """
    with transaction.atomic():
        seq = _next_seq(stream)
        event = LiveEvent.objects.create(stream=stream, seq=seq, kind=kind, payload=payload)
    message = event.as_message()
    transaction.on_commit(lambda: _send(stream, message))
    return event


def _next_seq(stream: str) -> int:
    """The stream's next number, in one statement (a rollout publishes each step: three queries a step were a
    tenth of its cost). The UPDATE takes the row lock, so two writers on one stream get consecutive, distinct
    numbers; SQLite (3.35+) and PostgreSQL both answer UPDATE ... RETURNING."""
    table = connection.ops.quote_name(StreamCounter._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET last_seq = last_seq + 1 WHERE stream = %s RETURNING last_seq", [stream])
        row = cursor.fetchone()
    if row is not None:
        return int(row[0])
    counter, created = StreamCounter.objects.get_or_create(stream=stream, defaults={"last_seq": 1})
    return 1 if created else _next_seq(stream)  # another writer made the row first: take the next number after its


_sender: dict[str, asyncio.AbstractEventLoop] = {}
_sender_lock = threading.Lock()


def _sender_loop() -> asyncio.AbstractEventLoop:
    """One event loop, in a daemon thread, for sends from threads that have none (the embedded worker's): without it
    async_to_sync starts a thread and a loop per event, about a third of a rollout step's cost."""
    with _sender_lock:
        if "loop" not in _sender:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="live-sender", daemon=True).start()
            _sender["loop"] = loop
        return _sender["loop"]


def _send(stream: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    event = {"type": "live.event", "event": message}
    # A thread that an ASGI server's loop handed work to (a view) sends on that loop, where its consumers wait.
    outer = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if outer is not None and outer.is_running():
        async_to_sync(layer.group_send)(group_name(stream), event)
        return
    asyncio.run_coroutine_threadsafe(layer.group_send(group_name(stream), event), _sender_loop()).result(timeout=30)


def live_events_after(*, stream: str, after: int, limit: int = 1000) -> list[dict[str, Any]]:
    rows = LiveEvent.objects.filter(stream=stream, seq__gt=after).order_by("seq")[:limit]
    return [row.as_message() for row in rows]


def live_last_seq(*, stream: str) -> int:
    """The stream's last published sequence number (0 before any): a page reads it before its rows and the
    client resumes with `after=` it, so an event published in between arrives once more, never not at all."""
    return StreamCounter.objects.filter(stream=stream).values_list("last_seq", flat=True).first() or 0
