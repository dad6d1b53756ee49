"""lab.exclusive: one execution at a time of a rollout or training run, across workers (PostgreSQL)."""

from __future__ import annotations

import random
import time
from typing import Any

import psycopg
import pytest
from django.conf import settings

from lab.exclusive import exclusively, lock_key

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _other_connection() -> psycopg.Connection[Any]:
    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db.get("PASSWORD") or None,
        dbname=db["NAME"],
        autocommit=True,
    )


def test_a_second_holder_is_refused_until_the_first_lets_go_or_its_connection_dies() -> None:
    pk = random.randrange(10**6, 2**31)  # no job of another test (run by the session's worker threads) has it
    with exclusively("rollout", pk) as mine:
        assert mine
        with _other_connection() as other:  # another worker's connection
            assert other.execute("SELECT pg_try_advisory_lock(hashtext('x'), 1)").fetchone() == (True,)  # unrelated keys are free
    worker = _other_connection()
    with exclusively("rollout", pk) as mine:
        assert mine  # released at the end of the block above
    key = lock_key("rollout", pk)
    assert worker.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone() == (True,)
    with exclusively("rollout", pk) as mine:
        assert not mine  # held by the other worker
    with exclusively("training-run", pk) as mine:
        assert mine  # another kind of work, another key
    worker_pid = worker.info.backend_pid
    worker.close()  # the worker dies: its lock goes with its connection
    # The server ends the closed session's backend a moment after the client hangs up (under load, after our next
    # query): wait, bounded, for that backend to be gone rather than race it.
    with _other_connection() as watcher:
        deadline = time.monotonic() + 10
        while watcher.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (worker_pid,)).fetchone() and time.monotonic() < deadline:
            time.sleep(0.02)
    with exclusively("rollout", pk) as mine:
        assert mine
