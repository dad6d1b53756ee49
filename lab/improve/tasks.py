"""Celery task of improvement loops (sent to the `gpu` queue: it trains and plays local models). Thin: the service works."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from lab.exclusive import one_at_a_time
from lab.improve.services import loop_run


@shared_task(bind=True, name="lab.improve.tasks.run_loop", acks_late=True, reject_on_worker_lost=True, max_retries=None)
def run_loop(self: Any, loop_id: int) -> str:
    """Late ack: a worker lost mid-stage leaves the message, and the redelivered task resumes the loop at its stage."""
    return one_at_a_time(self, "improvement-loop", loop_id, lambda: loop_run(loop_id=loop_id).status)
