"""Celery tasks of rollouts. Thin: the services do the work (and the CLI calls the same functions)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import DatabaseError

from lab.claims import claimed_run
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import rollout_run


@shared_task(
    bind=True,
    name="lab.rollouts.tasks.run_rollout",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(DatabaseError,),
    retry_backoff=0.5,
    retry_backoff_max=30,
    max_retries=8,
)
def run_rollout(self: Any, job_id: int) -> str:
    """Late ack: a worker killed mid-episode leaves the message, and the redelivered task resumes the episode.
    A database error (lost connection, a locked SQLite file) retries the task, which resumes the same way.
    A second delivery while another worker runs the episode waits its turn, and a job over its project's share of
    the workers goes back to the queue (lab.claims)."""
    return claimed_run(self, model=RolloutJob, kind="rollout", pk=job_id, work=lambda: rollout_run(job_id=job_id).status)
