"""Uploads: parse a file into canonical records (lab.ingest), store them, and export records back out.

An uploaded file is checked in the request (so a bad record answers 400 at once), written to disk, and
imported by a Celery job (`lab.trajectories.tasks.import_file`) that parses it again and stores it
atomically. The job can be re-run after a crash: storage is idempotent by content hash.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from lab import ingest
from lab.errors import DomainError
from lab.projects.models import Project
from lab.trajectories.models import ImportJob, ImportStatus, Provenance
from lab.trajectories.services import IngestOutcome, episodes_ingest, episodes_ingest_native

FORMATS = ingest.FORMAT_NAMES


@functools.cache
def _redactor(extra: tuple[str, ...]) -> ingest.Redactor:
    """The default secret patterns plus PRACTICUM_REDACTION_PATTERNS; compiled once per pattern set."""
    return ingest.Redactor([*ingest.DEFAULT_REDACTION_PATTERNS, *((f"custom_{i}", p) for i, p in enumerate(extra))])


@dataclass
class ParsedUpload:
    format: str
    records: list[dict[str, Any]]
    raws: list[Any]
    hashes: list[str]
    report: dict[str, Any] = field(default_factory=dict)


def parse_upload(data: bytes, *, filename: str, fmt: str) -> ParsedUpload:
    """Parse and validate an upload; any problem raises a DomainError naming the record, path and reason."""
    if fmt not in FORMATS:
        raise DomainError("unknown_format", f"format={fmt!r}; use one of {', '.join(FORMATS)}")
    try:
        result = ingest.import_payload(
            data,
            filename=filename,
            format=fmt,
            redaction_patterns=_redactor(tuple(settings.PRACTICUM_REDACTION_PATTERNS)),
            max_records=settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD,
            max_bytes=settings.PRACTICUM_MAX_UPLOAD_BYTES,
        )
    except ingest.IngestError as exc:
        raise DomainError(exc.code, exc.message, status=exc.status, **exc.details) from None
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
    outcomes = episodes_ingest(project=project, records=parsed.records, raws=parsed.raws, user=user, validated=True, hashes=parsed.hashes,
                               provenance=provenance)  # fmt: skip
    return StoredUpload(parsed.format, parsed.report, outcomes)


def _native_upload_ingest(*, project: Project, user: Any, data: bytes, filename: str, fmt: str, provenance: str) -> StoredUpload | None:
    """Native records on PostgreSQL, read and stored by the streaming fast path; None for the general path."""
    if fmt not in ("native", "auto") or connection.vendor != "postgresql" or len(data) > settings.PRACTICUM_MAX_UPLOAD_BYTES:
        return None
    redactor = _redactor(tuple(settings.PRACTICUM_REDACTION_PATTERNS))
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
    job = ImportJob.objects.create(
        project=project, created_by=user if user.is_authenticated else None, filename=filename, path=str(path), format=fmt,
        provenance=provenance,
    )  # fmt: skip
    from lab.trajectories.tasks import import_file

    transaction.on_commit(lambda: import_file.delay(job.pk))
    return job


def import_job_run(*, job_id: int) -> ImportJob:
    """The job body: parse the stored file and store its episodes. Safe to run twice."""
    job = ImportJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.status == ImportStatus.DONE:
        return job
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING)
    try:
        stored = upload_ingest(
            project=job.project, user=job.created_by, data=Path(job.path).read_bytes(), filename=job.filename, fmt=job.format,
            provenance=job.provenance,
        )  # fmt: skip
    except DomainError as exc:
        job.status, job.error = ImportStatus.FAILED, exc.as_json()["error"]
    else:
        job.status = ImportStatus.DONE
        job.episode_ids = [o.episode.pk for o in stored.outcomes]
        job.report = {
            **stored.report,
            "format": stored.format,
            "created": sum(o.created for o in stored.outcomes),
            "already_stored": sum(not o.created for o in stored.outcomes),
        }
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "error", "episode_ids", "report", "finished_at"])
    if job.status == ImportStatus.DONE:
        Path(job.path).unlink(missing_ok=True)
    return job


def import_job_wait(job: ImportJob, *, timeout_s: float) -> ImportJob:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (ImportStatus.DONE, ImportStatus.FAILED):
            break
        time.sleep(0.05)
    return job


def import_job_json(job: ImportJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "url": f"/api/v1/imports/{job.pk}/",
        "status": job.status,
        "filename": job.filename,
        "format": job.format,
        "provenance": job.provenance,
        "episode_ids": job.episode_ids,
        "report": job.report,
        "error": job.error,
    }


def export_openai(record: dict[str, Any]) -> dict[str, Any]:
    return ingest.export_openai(record)


def export_line(record: dict[str, Any], *, fmt: str, episode_id: int, provenance: str = "") -> bytes:
    """One JSONL line; the openai form's metadata names the episode's tier, so a trainer can weigh or drop reports."""
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
            },
        }
    return (json.dumps(payload, separators=(",", ":")) + "\n").encode()
