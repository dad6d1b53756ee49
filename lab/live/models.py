"""The durable log behind live streams: every event a spectator can see, numbered per stream.

A stream is "episode:<id>" or "run:<id>". An event is written in the same transaction as the change it
reports and published after commit; a client that reconnects with `after=N` reads what it missed from here,
so it receives each event exactly once and in order even if a publish was lost.
"""

from __future__ import annotations

from django.db import models


class LiveEvent(models.Model):
    stream = models.CharField(max_length=64)
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)  # step | status | metric | progress
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["stream", "seq"]
        constraints = [models.UniqueConstraint(fields=["stream", "seq"], name="unique_seq_per_stream")]

    def __str__(self) -> str:
        return f"{self.stream}#{self.seq} {self.kind}"

    def as_message(self) -> dict:
        return {"stream": self.stream, "seq": self.seq, "kind": self.kind, "payload": self.payload}


class StreamCounter(models.Model):
    """The last seq handed out per stream; locked row-wise so concurrent writers never share a number."""

    stream = models.CharField(max_length=64, primary_key=True)
    last_seq = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.stream} at {self.last_seq}"
