"""Celery tasks of training runs (routed to the `gpu` queue by lab.celery). Thin: the service does the work."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from lab.exclusive import one_at_a_time
from lab.runs.services import run_execute


@shared_task(bind=True, name="lab.runs.tasks.execute_run", acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_run(self: Any, run_id: int) -> str:
    """Late ack: a worker lost mid-run leaves the message; the redelivered task resumes from the last checkpoint.
    A delivery while another worker still runs it (lab.exclusive) waits its turn instead."""
    return one_at_a_time(self, "training-run", run_id, lambda: run_execute(run_id=run_id).status)
