"""Celery tasks (queue `cpu`): thin wrappers over the services, which the CLI calls directly."""

from __future__ import annotations

from celery import shared_task

from lab.diagnoses.jobs import diagnosis_job_run
from lab.diagnoses.models import Diagnosis
from lab.diagnoses.verification import diagnosis_verify


@shared_task(name="lab.diagnoses.tasks.run_job", acks_late=True)
def run_diagnosis_job(job_id: int) -> str:
    return str(diagnosis_job_run(job_id=job_id).status)


@shared_task(name="lab.diagnoses.tasks.verify", acks_late=True)
def verify_diagnosis(diagnosis_id: int) -> str:
    return str(diagnosis_verify(diagnosis=Diagnosis.objects.select_related("episode").get(pk=diagnosis_id)).verification)
