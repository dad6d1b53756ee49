"""Celery task of federations (gpu queue: participants train). Thin: the service does the work."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from lab.exclusive import one_at_a_time
from lab.federation.services import federation_execute


@shared_task(bind=True, name="lab.federation.tasks.execute_federation", acks_late=True, reject_on_worker_lost=True, max_retries=None)
def execute_federation(self: Any, federation_id: int) -> str:
    """Late ack: a worker lost mid-federation leaves the message; the redelivered task resumes after the last round."""
    return one_at_a_time(self, "federation", federation_id, lambda: federation_execute(federation_id=federation_id).status)
