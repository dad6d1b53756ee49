from __future__ import annotations

from celery import shared_task

from lab.trajectories.imports import import_job_run


@shared_task(name="lab.trajectories.tasks.import_file", acks_late=True)
def import_file(job_id: int) -> str:
    return import_job_run(job_id=job_id).status
