"""A background sender for a training loop's reports: `put` never waits on the network.

The loop appends to an in-memory buffer and goes on; a daemon thread sends what has gathered every `interval_s`
(or at once when asked to flush), in the order it was put. If the server is slow or away, reports wait in the
buffer and are sent when it answers; past `max_buffered` the oldest metric points are dropped and counted
(`dropped`), so a long outage costs memory up to a bound, never training time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from practicum_client.errors import PracticumError, TransportError

log = logging.getLogger("practicum_client")

MAX_POINTS_PER_SEND = 1000  # the server's limit per report (lab.runs.external.MAX_POINTS_PER_REPORT)


@dataclass
class Item:
    kind: str  # "metrics" (one point) or "checkpoint"
    payload: dict[str, Any] = field(default_factory=dict)


class Reporter:
    def __init__(
        self,
        send: Callable[[str, list[dict[str, Any]]], None],
        *,
        interval_s: float = 2.0,
        max_buffered: int = 100_000,
        retry_wait_s: float = 5.0,
    ) -> None:
        """`send(kind, payloads)` delivers consecutive items of one kind; it raises on failure."""
        self.send = send
        self.interval_s = interval_s
        self.max_buffered = max_buffered
        self.retry_wait_s = retry_wait_s
        self.items: deque[Item] = deque()
        self.dropped = 0
        self.last_error: PracticumError | None = None
        self.condition = threading.Condition()
        self.flushing = 0
        self.closed = False
        self.sending = False
        self.thread = threading.Thread(target=self._loop, name="practicum-reporter", daemon=True)
        self.thread.start()

    def put(self, kind: str, payload: dict[str, Any]) -> None:
        with self.condition:
            if self.closed:
                raise PracticumError("reporter_closed", "this run has finished; start another to report more")
            self.items.append(Item(kind, payload))
            if len(self.items) > self.max_buffered:
                self._drop_oldest_metric()
            if kind == "checkpoint":
                self.condition.notify()  # rare and worth seeing at once

    def _drop_oldest_metric(self) -> None:
        for i, item in enumerate(self.items):
            if item.kind == "metrics":
                del self.items[i]
                self.dropped += 1
                if self.dropped == 1:
                    log.warning("practicum: the server is not keeping up; dropping the oldest buffered metrics")
                return

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Send everything buffered now; True when the buffer emptied within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        with self.condition:
            self.flushing += 1
            self.condition.notify_all()
            try:
                while self.items or self.sending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self.condition.wait(left)
                return True
            finally:
                self.flushing -= 1

    def close(self, timeout_s: float = 30.0) -> bool:
        delivered = self.flush(timeout_s)
        with self.condition:
            self.closed = True
            self.condition.notify_all()
        self.thread.join(timeout=1.0)
        return delivered

    def _take(self) -> list[Item]:
        """The leading items of one kind, at most one send's worth (caller holds the lock)."""
        taken: list[Item] = []
        while self.items and self.items[0].kind == (taken[0].kind if taken else self.items[0].kind) and len(taken) < MAX_POINTS_PER_SEND:
            taken.append(self.items.popleft())
        return taken

    def _loop(self) -> None:
        while True:
            with self.condition:
                if not (self.flushing or self.closed or len(self.items) >= MAX_POINTS_PER_SEND):
                    self.condition.wait(self.interval_s)  # gather an interval's reports; a flush, a close or a checkpoint wakes it
                if not self.items:
                    if self.closed:
                        return
                    continue
                batch = self._take()
                self.sending = True
            failed = self._deliver(batch)
            with self.condition:
                if failed:
                    self.items.extendleft(reversed(batch))  # kept in order for the next try
                self.sending = False
                self.condition.notify_all()
                if failed and self.closed:
                    return  # closing while the server is away: what is left is given up (close() answered False)
            if failed:
                time.sleep(self.retry_wait_s)

    def _deliver(self, batch: list[Item]) -> bool:
        """True when the batch should be tried again later (no answer); a refusal is final and logged."""
        if not batch:
            return False
        try:
            self.send(batch[0].kind, [item.payload for item in batch])
        except TransportError as exc:
            self.last_error = exc
            return True
        except PracticumError as exc:
            self.last_error = exc
            if exc.status in (429,) or exc.status >= 500:
                return True
            log.warning("practicum: the server refused a report (%s); it is dropped", exc)
        return False
