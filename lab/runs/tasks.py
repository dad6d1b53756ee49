"""Celery tasks of training runs (routed to the `gpu` queue by lab.celery). Thin: the service does the work."""

from __future__ import annotations

from celery import shared_task

from lab.runs.services import run_execute


@shared_task(name="lab.runs.tasks.execute_run", acks_late=True, reject_on_worker_lost=True)
def execute_run(run_id: int) -> str:
    """Late ack: a worker lost mid-run leaves the message; the redelivered task resumes from the last checkpoint."""
    return run_execute(run_id=run_id).status
