"""`claimed_run(task, ...)`: a job's Celery task runs its work once, and within its project's fair share of the workers.

    @shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, ...)
    def run_rollout(self, job_id):
        return claimed_run(self, model=RolloutJob, kind="rollout", pk=job_id, work=lambda: rollout_run(job_id=job_id).status)

Many workers on many machines take messages from one broker. Late acks mean a message can arrive twice (a worker
lost mid-task, a visibility timeout passed); a claim in PostgreSQL makes the second delivery harmless:

1. a job whose row is already terminal is done: the delivery is acknowledged and nothing runs;
2. the job's advisory lock (lab.exclusive) is taken for the whole run: a duplicate finds it held and waits its
   turn, and the lock dies with a lost worker's connection, so the next delivery resumes the job;
3. one of the project's slot locks is taken (`project_slot`): at most `project_concurrency(project)` jobs of a
   project run at once across all workers. When none is free the message goes back to the queue with a countdown
   (never a busy loop in the worker), behind the other projects' messages, so one project's large evaluation
   cannot starve the others. Slots are session advisory locks too, so a killed worker never leaks one.

On SQLite (the embedded in-process worker, which has no redelivery) the slots are counted in this process.
"""

from __future__ import annotations

import random
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from celery.exceptions import Retry
from django.conf import settings
from django.db import connection, models

from lab.exclusive import exclusively
from lab.jobs import TERMINAL, JobStatus
from lab.projects.models import MAX_PROJECT_CONCURRENCY, Project

T = TypeVar("T")
_SLOT_NAMESPACE = zlib.crc32(b"project-slot") & 0x7FFFFFFF
MAX_WAIT_FACTOR = 16  # a deep backlog waits at most this many recheck periods before it looks again

_local_lock = threading.Lock()
_local_slots: dict[int, set[int]] = {}


def project_concurrency(project_id: int) -> int:
    """The project's own limit when it has one, else the deployment's PRACTICUM_PROJECT_CONCURRENCY."""
    own = Project.objects.filter(pk=project_id).values_list("max_concurrent_jobs", flat=True).first()
    return int(own or settings.PRACTICUM_PROJECT_CONCURRENCY)


def slot_key(project_id: int, slot: int) -> tuple[int, int]:
    assert 0 <= slot < MAX_PROJECT_CONCURRENCY, f"slot {slot} outside 0..{MAX_PROJECT_CONCURRENCY - 1}"
    return _SLOT_NAMESPACE, (project_id * MAX_PROJECT_CONCURRENCY + slot) % 2**31


@contextmanager
def project_slot(project_id: int, limit: int) -> Iterator[int | None]:
    """One of the project's `limit` slots for the duration of the block (its number), or None when all are taken."""
    if connection.vendor != "postgresql":
        with _local_slot(project_id, limit) as slot:
            yield slot
        return
    taken: tuple[int, int] | None = None
    slot = None
    with connection.cursor() as cursor:
        # Slots already held are skipped, this session's own among them (advisory locks are re-entrant per session);
        # a slot taken by another worker between the two queries is simply refused by the try.
        held = _held_slots(cursor, project_id)
        for candidate in (i for i in range(limit) if i not in held):
            key = slot_key(project_id, candidate)
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
            if cursor.fetchone()[0]:
                taken, slot = key, candidate
                break
    try:
        yield slot
    finally:
        if taken is not None:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", taken)


@contextmanager
def _local_slot(project_id: int, limit: int) -> Iterator[int | None]:
    with _local_lock:
        held = _local_slots.setdefault(project_id, set())
        slot = next((i for i in range(limit) if i not in held), None)
        if slot is not None:
            held.add(slot)
    try:
        yield slot
    finally:
        if slot is not None:
            with _local_lock:
                _local_slots[project_id].discard(slot)


def project_slots_in_use(project_id: int) -> int:
    """How many of the project's jobs hold a slot now, across every worker (this process's count on SQLite)."""
    if connection.vendor != "postgresql":
        with _local_lock:
            return len(_local_slots.get(project_id, ()))
    with connection.cursor() as cursor:
        return len(_held_slots(cursor, project_id))


def _held_slots(cursor: Any, project_id: int) -> set[int]:
    first = slot_key(project_id, 0)[1]
    cursor.execute(
        "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = %s AND objid >= %s AND objid < %s",
        (_SLOT_NAMESPACE, first, first + MAX_PROJECT_CONCURRENCY),
    )
    return {int(objid) - first for (objid,) in cursor.fetchall()}


def wait_countdown(*, backlog: int, limit: int) -> float:
    """Seconds a task over its project's limit waits before it looks again: one recheck period per `limit` jobs of the
    project already queued ahead (they need the slots first), capped, with jitter so that waiting tasks spread out."""
    periods = min(1 + backlog // max(limit, 1), MAX_WAIT_FACTOR)
    return settings.PRACTICUM_FAIR_RECHECK_S * periods * random.uniform(1.0, 1.5)


def requeue(task: Any, *, countdown: float) -> Retry:
    """Publish the task's message again, due in `countdown` s, and the Retry that acknowledges this delivery.
    Unlike `task.retry` it leaves the retry count alone: waiting for a slot is not a failure."""
    task.signature_from_request(countdown=countdown).apply_async()
    return Retry(f"waiting {countdown:.1f} s for a slot of its project", when=countdown)


def claimed_run(task: Any, *, model: type[models.Model], kind: str, pk: int, work: Callable[[], T]) -> T | str:
    """`work()` for job `pk` of `model` (a lab.jobs.Job with a `project`) once, within its project's slots.
    Returns the job's status without running anything when the job is gone or already ended."""
    row = model.objects.filter(pk=pk).values("project_id", "status").first()  # type: ignore[attr-defined]
    if row is None:
        return "missing"  # deleted (its project with it) while queued: nothing to do
    if row["status"] in TERMINAL:
        return str(row["status"])
    with exclusively(kind, pk) as mine:
        if not mine:
            raise task.retry(countdown=settings.PRACTICUM_DUPLICATE_RECHECK_S, max_retries=None)
        limit = project_concurrency(row["project_id"])
        with project_slot(row["project_id"], limit) as slot:
            if slot is None:
                backlog = model.objects.filter(project_id=row["project_id"], status=JobStatus.QUEUED, pk__lt=pk).count()  # type: ignore[attr-defined]
                raise requeue(task, countdown=wait_countdown(backlog=backlog, limit=limit))
            return work()
