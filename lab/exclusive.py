"""`exclusively(kind, pk)`: one execution at a time of a long Celery task, across workers.

    with exclusively("training-run", run.pk) as mine:
        if not mine:
            raise self.retry(countdown=settings.PRACTICUM_DUPLICATE_RECHECK_S)   # a live worker runs it: look again later
        run_execute(run_id=run.pk)

With Redis as the broker, a message whose task runs longer than the visibility timeout goes back to the queue
although its worker is alive and still running it: without this, a training run of a few hours would be run
twice at once from the same checkpoints. On PostgreSQL the executing worker's database connection holds a
session advisory lock for the task's duration. A duplicate finds it taken and retries later, so one message
stays in flight; if the worker dies, its connection and the lock go with it, and the next try resumes the work
(from its checkpoint or replayed steps). Elsewhere (SQLite, the embedded in-process worker, which has no
redelivery) every call is `mine`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError, connection


def lock_key(kind: str, pk: int) -> tuple[int, int]:
    """The advisory lock's two-int key: a namespace per kind of work, and the id (ids past 2**31 would wrap; none gets there)."""
    return zlib.crc32(kind.encode()) & 0x7FFFFFFF, pk % 2**31


@contextmanager
def exclusively(kind: str, pk: int) -> Iterator[bool]:
    if connection.vendor != "postgresql":
        yield True
        return
    key = lock_key(kind, pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        mine = bool(cursor.fetchone()[0])
    try:
        yield mine
    finally:
        if mine:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", key)
            except DatabaseError:
                connection.close()  # a session that cannot unlock must not keep the lock: ending it releases it
