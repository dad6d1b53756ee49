"""The resume point a page hands its live client: the stream's last sequence number, 0 before any event."""

from __future__ import annotations

import pytest

from lab.live.services import live_last_seq, live_publish

pytestmark = pytest.mark.django_db


def test_the_last_seq_counts_the_streams_own_events_only() -> None:
    assert live_last_seq(stream="episode:7") == 0
    for n in range(3):
        live_publish(stream="episode:7", kind="step", payload={"n": n})
    live_publish(stream="run:7", kind="metric", payload={})
    assert (live_last_seq(stream="episode:7"), live_last_seq(stream="run:7"), live_last_seq(stream="episode:8")) == (3, 1, 0)
