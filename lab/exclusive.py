"""`one_at_a_time(task, kind, pk, work)`: one execution at a time of a long Celery task, across workers.

    @shared_task(bind=True, ...)
    def execute_run(self, run_id):
        return one_at_a_time(self, "training-run", run_id, lambda: run_execute(run_id=run_id).status)

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection

T = TypeVar("T")


def one_at_a_time(task: Any, kind: str, pk: int, work: Callable[[], T]) -> T:
    """`work()` unless another worker is running it: then the (bound) Celery task retries later, so that one
    message stays in flight to take over if that worker dies."""
    with exclusively(kind, pk) as mine:
        if not mine:
            raise task.retry(countdown=settings.PRACTICUM_DUPLICATE_RECHECK_S, max_retries=None)
        return work()


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
