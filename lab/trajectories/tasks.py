"""Celery tasks of uploads. Thin: the import service does the work."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from lab.claims import claimed_run
from lab.trajectories.imports import import_job_run
from lab.trajectories.models import ImportJob


@shared_task(bind=True, name="lab.trajectories.tasks.import_file", acks_late=True, reject_on_worker_lost=True)
def import_file(self: Any, job_id: int) -> str:
    """Late ack: a lost worker's import runs again (storage is idempotent by content hash); a second delivery while
    one runs waits, and an import over its project's share of the workers goes back to the queue (lab.claims)."""
    return claimed_run(self, model=ImportJob, kind="import", pk=job_id, work=lambda: import_job_run(job_id=job_id).status)
