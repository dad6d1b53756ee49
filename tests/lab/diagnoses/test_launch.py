"""diagnosis_job_launch: the one way a diagnosis job is made; it is stored queued and enqueued only after commit."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses.jobs import diagnosis_job_launch
from lab.diagnoses.models import DiagnosisJob
from lab.errors import DomainError
from lab.jobs import JobStatus

pytestmark = pytest.mark.django_db


def test_it_stores_a_queued_job_and_enqueues_it_after_commit(
    alice: Any, project_a: Any, store: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    episode = store()
    enqueued: list[int] = []
    monkeypatch.setattr("lab.diagnoses.tasks.run_diagnosis_job.delay", enqueued.append)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = diagnosis_job_launch(project=project_a, episode_ids=[episode.pk, episode.pk], verify=True, user=alice)
    assert enqueued == [] and len(callbacks) == 1  # nothing runs before the job's row is committed
    callbacks[0]()
    assert enqueued == [job.pk]
    assert (job.status, job.total, job.episode_ids, job.created_by) == (JobStatus.QUEUED, 1, [episode.pk], alice)


def test_it_enqueues_nothing_for_an_inline_caller(project_a: Any, store: Any, django_capture_on_commit_callbacks: Any) -> None:
    episode = store()
    with django_capture_on_commit_callbacks() as callbacks:
        job = diagnosis_job_launch(project=project_a, episode_ids=[episode.pk], verify=True, enqueue=False)
    assert callbacks == [] and job.created_by is None


def test_a_refused_job_is_neither_stored_nor_enqueued(project_a: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(DomainError) as refused:
        diagnosis_job_launch(project=project_a, episode_ids=[], verify=True)
    assert refused.value.code == "invalid_episodes" and callbacks == [] and not DiagnosisJob.objects.exists()
