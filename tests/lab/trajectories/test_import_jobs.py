"""Import jobs always end: any error fails the job with a readable reason and removes its file; `?wait=1`
never waits on a job that can no longer finish."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lab.jobs import JobStatus
from lab.trajectories import imports
from lab.trajectories.models import Episode, ImportJob

pytestmark = pytest.mark.django_db

CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def _job(project: Any, alice: Any, tmp_path: Path, *, status: str = JobStatus.QUEUED, write: bool = True) -> ImportJob:
    path = tmp_path / "upload.json"
    if write:
        path.write_bytes(json.dumps(CHAT).encode())
    return ImportJob.objects.create(project=project, created_by=alice, filename="chat.json", path=str(path), status=status)


def test_an_unexpected_error_fails_the_job_with_a_reason_and_removes_its_file(
    project_a: Any, alice: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(imports.ingest, "import_payload", broken)
    job = imports.import_job_run(job_id=_job(project_a, alice, tmp_path).pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.ended_at is not None
    assert job.error["code"] == "import_failed"
    assert "RuntimeError: parser exploded" in job.error["message"]
    assert not Path(job.path).exists() and Episode.objects.count() == 0


def test_a_refused_file_fails_the_job_and_removes_its_file(project_a: Any, alice: Any, tmp_path: Path) -> None:
    job = _job(project_a, alice, tmp_path)
    Path(job.path).write_bytes(b"{not json")
    job = imports.import_job_run(job_id=job.pk)
    assert job.status == "failed" and job.error["code"] == "invalid_upload" and "not valid JSON" in job.error["message"]
    assert not Path(job.path).exists()


def test_a_job_whose_file_is_gone_fails_with_a_reason(project_a: Any, alice: Any, tmp_path: Path) -> None:
    job = imports.import_job_run(job_id=_job(project_a, alice, tmp_path, write=False).pk)
    assert job.status == "failed" and job.error["code"] == "file_missing"


def test_a_failed_job_is_not_run_again(project_a: Any, alice: Any, tmp_path: Path) -> None:
    job = _job(project_a, alice, tmp_path, status=JobStatus.FAILED)
    assert imports.import_job_run(job_id=job.pk).status == "failed" and Episode.objects.count() == 0


def test_wait_returns_at_once_for_a_failed_job(project_a: Any, alice: Any, tmp_path: Path) -> None:
    job = _job(project_a, alice, tmp_path, status=JobStatus.FAILED)
    started = time.monotonic()
    assert imports.import_job_wait(job, timeout_s=30).status == "failed"
    assert time.monotonic() - started < 5


def test_wait_fails_and_returns_at_once_for_a_running_job_whose_file_is_gone(project_a: Any, alice: Any, tmp_path: Path) -> None:
    job = _job(project_a, alice, tmp_path, status=JobStatus.RUNNING, write=False)
    started = time.monotonic()
    waited = imports.import_job_wait(job, timeout_s=30)
    assert time.monotonic() - started < 5
    assert waited.status == "failed" and waited.error["code"] == "file_missing"
    assert ImportJob.objects.get(pk=job.pk).status == "failed"


def test_wait_inside_a_transaction_returns_at_once(project_a: Any, alice: Any, tmp_path: Path) -> None:
    # A job is enqueued on commit: inside the test's transaction it cannot start, so waiting would only hang.
    job = _job(project_a, alice, tmp_path)
    started = time.monotonic()
    assert imports.import_job_wait(job, timeout_s=30).status == "queued"
    assert time.monotonic() - started < 5


def test_wait_gives_up_at_its_timeout_on_a_job_that_may_still_run(
    transactional_db: Any, project_a: Any, alice: Any, tmp_path: Path
) -> None:
    job = _job(project_a, alice, tmp_path)
    started = time.monotonic()
    assert imports.import_job_wait(job, timeout_s=0.3).status == "queued"
    assert 0.3 <= time.monotonic() - started < 5


def test_upload_with_wait_answers_the_failed_job_when_the_parser_breaks(celery_worker: Any, alice_api: Any, monkeypatch: Any) -> None:
    real = imports.ingest.import_payload
    calls = []

    def breaks_in_the_job(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:  # the request's own check passes; the job's run breaks
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(imports.ingest, "import_payload", breaks_in_the_job)
    started = time.monotonic()
    response = alice_api.post(
        "/api/v1/episodes/import/?wait=1", {"file": SimpleUploadedFile("chat.json", json.dumps(CHAT).encode())}, format="multipart"
    )
    assert time.monotonic() - started < 60
    body = response.json()
    assert response.status_code == 202 and body["status"] == "failed"
    assert body["error"]["code"] == "import_failed" and "RuntimeError: disk on fire" in body["error"]["message"]
    assert not Path(ImportJob.objects.get().path).exists() and Episode.objects.count() == 0


def test_a_job_the_broker_refuses_fails_at_once_instead_of_staying_queued(
    alice_api: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from lab.trajectories import tasks

    def refuse(*args: Any) -> Any:
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.import_file, "delay", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_api.post(
            "/api/v1/episodes/import/", {"file": SimpleUploadedFile("chat.json", json.dumps(CHAT).encode())}, format="multipart"
        )
    assert response.status_code == 202
    job = ImportJob.objects.get()
    assert job.status == "failed" and job.error["code"] == "not_queued" and "ConnectionError: broker down" in job.error["message"]
    assert not Path(job.path).exists()
    assert imports.import_job_wait(job, timeout_s=30).status == "failed"
