"""Uploads: parse a file into canonical records (lab.ingest), store them, and export records back out.

An uploaded file is checked in the request (so a bad record answers 400 at once), written to disk, and
imported by a Celery job (`lab.trajectories.tasks.import_file`) that parses it again and stores it
atomically. The job can be re-run after a crash: storage is idempotent by content hash.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from environments.records import Record
from lab import ingest
from lab.errors import DomainError
from lab.jobs import JobStatus
from lab.projects.models import Project
from lab.trajectories.models import ImportJob, Provenance
from lab.trajectories.redaction import redactor_configured
from lab.trajectories.services import IngestOutcome, episodes_ingest, episodes_ingest_native

FORMATS = ingest.FORMAT_NAMES
logger = logging.getLogger(__name__)


@dataclass
class ParsedUpload:
    format: str
    records: list[Record]
    raws: list[Any]
    hashes: list[str]
    report: dict[str, Any] = field(default_factory=dict)


def parse_upload(data: bytes, *, filename: str, fmt: str) -> ParsedUpload:
    """Parse and validate an upload; any problem raises a DomainError naming the record, path and reason."""
    if fmt not in FORMATS:
        raise DomainError("unknown_format", f"format={fmt!r}; use one of {', '.join(FORMATS)}")
    # An IngestError is a DomainError: it reaches the API and the import job with its code and status.
    result = ingest.import_payload(
        data,
        filename=filename,
        format=fmt,
        redaction_patterns=redactor_configured(),
        max_records=settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD,
        max_bytes=settings.PRACTICUM_MAX_UPLOAD_BYTES,
        max_expanded_bytes=settings.PRACTICUM_MAX_EXPANDED_BYTES,
        max_expansion_ratio=settings.PRACTICUM_MAX_EXPANSION_RATIO,
        expansion_floor=settings.PRACTICUM_EXPANSION_FLOOR_BYTES,
    )
    return ParsedUpload(
        format=result.format,
        records=[episode.record for episode in result.episodes],
        # A native record is its own payload: storing it twice would only double the bytes written.
        raws=[None if episode.format == "native" else episode.raw for episode in result.episodes],
        hashes=[episode.content_hash for episode in result.episodes],
        report=result.report,
    )


@dataclass
class StoredUpload:
    format: str
    report: dict[str, Any]
    outcomes: list[IngestOutcome]


def upload_size_check(size: int, *, what: str = "file") -> None:
    """The byte budget of every upload path (the API and the console's upload page): 413 naming the size and the limit."""
    if size > settings.PRACTICUM_MAX_UPLOAD_BYTES:
        raise DomainError("too_large", f"the {what} is {size} bytes; the limit is {settings.PRACTICUM_MAX_UPLOAD_BYTES}", status=413)


def upload_provenance(auth: Any) -> str:
    """The tier of what a request sends: `external` through an API key the operator flagged (create_api_key
    --external), `upload` otherwise (a session, an ordinary key). Nothing in the payload can change it."""
    return Provenance.EXTERNAL if getattr(auth, "external", False) is True else Provenance.UPLOAD


def upload_ingest(
    *, project: Project, user: Any, data: bytes, filename: str, fmt: str, provenance: str = Provenance.UPLOAD
) -> StoredUpload:
    """Parse an upload and store its episodes atomically, with the garbage collector paused throughout
    (lab.ingest.collector: it cost nearly half of a large upload's time). The parsed records are freed before
    the collector resumes, so it never has to traverse them.

    Two uploads of the same new content at once both find it absent, and the second to commit breaks the
    one-episode-per-content constraint (or a task's or agent's, made twice): that upload is stored again from
    the start, and then finds what the first one stored.
    """
    assert provenance != Provenance.RECORDED, "what the API receives is never recorded by the server"
    arguments = {"project": project, "user": user, "data": data, "filename": filename, "fmt": fmt, "provenance": provenance}
    with ingest.collector_paused():
        try:
            return _upload_ingest_once(**arguments)
        except IntegrityError:
            return _upload_ingest_once(**arguments)


def _upload_ingest_once(*, project: Project, user: Any, data: bytes, filename: str, fmt: str, provenance: str) -> StoredUpload:
    fast = _native_upload_ingest(project=project, user=user, data=data, filename=filename, fmt=fmt, provenance=provenance)
    if fast is not None:
        return fast
    parsed = parse_upload(data, filename=filename, fmt=fmt)
    outcomes = episodes_ingest(
        project=project, records=parsed.records, raws=parsed.raws, user=user, validated=True, hashes=parsed.hashes, provenance=provenance
    )
    return StoredUpload(parsed.format, parsed.report, outcomes)


def _native_upload_ingest(*, project: Project, user: Any, data: bytes, filename: str, fmt: str, provenance: str) -> StoredUpload | None:
    """Native records on PostgreSQL, read and stored by the streaming fast path; None for the general path."""
    if fmt not in ("native", "auto") or connection.vendor != "postgresql" or len(data) > settings.PRACTICUM_MAX_UPLOAD_BYTES:
        return None
    redactor = redactor_configured()
    records = ingest.read_native(data, filename=filename, redactor=redactor, max_records=settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD)
    if records is None:
        return None
    outcomes = episodes_ingest_native(project=project, records=records, user=user, provenance=provenance)
    if outcomes is None:
        return None
    summaries = [
        ingest.EpisodeSummary("native", filename, record.origin, outcome.episode.step_count, outcome.episode.content_hash)
        for record, outcome in zip(records, outcomes, strict=True)
    ]
    return StoredUpload("native", ingest.build_report(summaries, ["native"]), outcomes)


def import_job_create(
    *, project: Project, user: Any, filename: str, data: bytes, fmt: str, provenance: str = Provenance.UPLOAD
) -> ImportJob:
    with ingest.collector_paused():
        parse_upload(data, filename=filename, fmt=fmt)  # refuse bad files before anything is written
    folder = Path(settings.PRACTICUM_UPLOAD_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}-{Path(filename).name[-100:]}"
    path.write_bytes(data)
    try:
        job = ImportJob.objects.create(
            project=project,
            created_by=user if user.is_authenticated else None,
            filename=filename,
            path=str(path),
            format=fmt,
            provenance=provenance,
        )
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    transaction.on_commit(lambda: _import_job_enqueue(job))
    return job


def _import_job_enqueue(job: ImportJob) -> None:
    """Queue the job; if the broker refuses it, nothing would ever run it: it fails now, naming why."""
    from lab.trajectories.tasks import import_file

    try:
        import_file.delay(job.pk)
    except Exception as exc:
        logger.exception("import job %s could not be queued", job.pk)
        message = f"the import could not be queued ({type(exc).__name__}: {str(exc)[:300]}); upload the file again"
        ImportJob.objects.filter(pk=job.pk, status=JobStatus.QUEUED).transition(
            JobStatus.FAILED, error={"code": "not_queued", "message": message}
        )
        Path(job.path).unlink(missing_ok=True)


def import_job_run(*, job_id: int) -> ImportJob:
    """The job body: parse the stored file and store its episodes. Safe to run twice.

    Whatever goes wrong ends the job `failed` with a readable reason, and a job that ended (either way) has
    its stored file removed: nothing is left that a retry could use, and nothing lingers on disk.
    """
    job = ImportJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.status in (JobStatus.FINISHED, JobStatus.FAILED):
        return job
    job.mark_running()
    try:
        data = Path(job.path).read_bytes()
        stored = upload_ingest(
            project=job.project, user=job.created_by, data=data, filename=job.filename, fmt=job.format, provenance=job.provenance
        )
    except FileNotFoundError:
        job.mark_failed(_FILE_GONE)
    except DomainError as exc:
        job.mark_failed(exc.as_json()["error"])
    except Exception as exc:  # a bug or an outage must not leave the job running forever; the trace goes to the log
        logger.exception("import job %s failed", job.pk)
        message = f"the import stopped on an unexpected error ({type(exc).__name__}: {str(exc)[:300]}); nothing was stored"
        job.mark_failed({"code": "import_failed", "message": message})
    else:
        report = {
            **stored.report,
            "format": stored.format,
            "created": sum(o.created for o in stored.outcomes),
            "already_stored": sum(not o.created for o in stored.outcomes),
        }
        job.mark_finished(episode_ids=[o.episode.pk for o in stored.outcomes], report=report)
    Path(job.path).unlink(missing_ok=True)
    return job


_FILE_GONE = {"code": "file_missing", "message": "the uploaded file is no longer on the server; upload it again"}
FINAL_STATUSES = (JobStatus.FINISHED, JobStatus.FAILED)


def import_job_wait(job: ImportJob, *, timeout_s: float) -> ImportJob:
    """The job once it is final, or as it stands after `timeout_s`; at once when it can never finish.

    A job can never finish when its file is gone while it is still queued or running (the job body reads
    the file first and removes it only after saving its final state): it is marked failed. Inside a
    transaction the job is not even enqueued until commit, so there is nothing to wait for.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        job.refresh_from_db()
        if job.status in FINAL_STATUSES:
            return job
        if not Path(job.path).exists():
            ImportJob.objects.filter(pk=job.pk).transition(JobStatus.FAILED, error=_FILE_GONE)  # if still queued or running
            job.refresh_from_db()
            return job
        if connection.in_atomic_block or time.monotonic() >= deadline:
            return job
        time.sleep(0.05)


def import_job_json(job: ImportJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "url": f"/api/v1/imports/{job.pk}/",
        "status": "done" if job.status == JobStatus.FINISHED else job.status,  # the imports API's word since before JobStatus
        "filename": job.filename,
        "format": job.format,
        "provenance": job.provenance,
        "episode_ids": job.episode_ids,
        "report": job.report,
        "error": job.error,
    }


def export_openai(record: Record) -> dict[str, Any]:
    return ingest.export_openai(record)


def export_line(record: Record, *, fmt: str, episode_id: int, provenance: str = "") -> bytes:
    """One JSONL line; the openai form's metadata names the episode's tier, so a trainer can weigh or drop reports."""
    payload: Mapping[str, Any]
    if fmt == "native":
        payload = record
    else:
        payload = {
            **export_openai(record),
            "metadata": {
                "episode_id": episode_id,
                "provenance": provenance,
                "env": record["header"].get("env"),
                "task": record["header"].get("task"),
                "score": record["header"].get("score"),
                **({"dreamed": True} if (record["header"].get("meta") or {}).get("dreamed") is True else {}),
            },
        }
    return (json.dumps(payload, separators=(",", ":")) + "\n").encode()
