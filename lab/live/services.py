"""Publishing live events: numbered and stored inside the caller's transaction, sent to clients after commit."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from lab.live.models import LiveEvent, StreamCounter


def group_name(stream: str) -> str:
    """Channel-layer group names allow only [a-zA-Z0-9._-]."""
    return "live." + stream.replace(":", ".")


def live_publish(*, stream: str, kind: str, payload: dict[str, Any]) -> LiveEvent:
    """Store the next event of `stream` and send it to the stream's group once the transaction commits.

    If the transaction rolls back, the event disappears with the change it described and is never sent.
    """
    with transaction.atomic():
        StreamCounter.objects.get_or_create(stream=stream)
        # The UPDATE takes the row lock, so two writers on one stream get consecutive, distinct numbers.
        StreamCounter.objects.filter(stream=stream).update(last_seq=F("last_seq") + 1)
        seq = StreamCounter.objects.values_list("last_seq", flat=True).get(stream=stream)
        event = LiveEvent.objects.create(stream=stream, seq=seq, kind=kind, payload=payload)
    message = event.as_message()
    transaction.on_commit(lambda: _send(stream, message))
    return event


def _send(stream: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(group_name(stream), {"type": "live.event", "event": message})


def live_events_after(*, stream: str, after: int, limit: int = 1000) -> list[dict[str, Any]]:
    rows = LiveEvent.objects.filter(stream=stream, seq__gt=after).order_by("seq")[:limit]
    return [row.as_message() for row in rows]


def live_last_seq(*, stream: str) -> int:
    """The stream's last published sequence number (0 before any): a page reads it before its rows and the
    client resumes with `after=` it, so an event published in between arrives once more, never not at all."""
    return StreamCounter.objects.filter(stream=stream).values_list("last_seq", flat=True).first() or 0
