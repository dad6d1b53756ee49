"""What every background job shares: one status vocabulary, its legal moves, and one abstract base model.

Rollouts, evaluations, training runs, imports, diagnosis jobs, improvement loops and federations all inherit `Job`,
so a status, an error, who started it and when read the same everywhere. This module belongs to no app (an abstract
model needs none): any app may import it without importing another app, which is what used to tie rollouts to runs.

A job's status changes only here, two ways, both bound by `TRANSITIONS`:

    job.mark_running(attempts=job.attempts + 1)      # one row: refused (Conflict "illegal_transition") when illegal
    RolloutJob.objects.filter(pk=pk).transition(JobStatus.FAILED, error=msg)  # compare-and-set: rows that may move, move

The row methods are for a job the caller holds (often locked); the queryset's `transition` is for the races a worker
loses gracefully (a cancel that arrives while it runs wins: the worker's "finished" then changes nothing).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone

from lab.errors import Conflict


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED)

# Every legal move of a job's status, the one table of them. Finished and cancelled are final.
TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.FAILED, JobStatus.CANCELLED}),
    # running -> running: a worker died and left its job running; the redelivered task resumes it.
    JobStatus.RUNNING: frozenset({JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED}),
    # A failed job may run again: an improvement loop resumes at the stage it failed in (queued by loop_resume, or
    # run at once by `manage.py improve run`), and a redelivered diagnosis job runs again.
    JobStatus.FAILED: frozenset({JobStatus.QUEUED, JobStatus.RUNNING}),
    JobStatus.FINISHED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}

# Set only by the life-cycle methods below, never passed to them as plain fields.
_LIFE_CYCLE_FIELDS = frozenset({"status", "started_at", "ended_at"})


def transition_allowed(current: str, to: str) -> bool:
    return to in TRANSITIONS[current]


def transition_sources(to: str) -> tuple[str, ...]:
    """The statuses a job may move to `to` from."""
    return tuple(status for status, targets in TRANSITIONS.items() if to in targets)


def _stamps(to: str, *, started_at: Any, now: datetime, stopping: bool = False) -> dict[str, Any]:
    """The timestamps that go with a move to `to`: started_at once (a resumed job keeps its first start), ended_at
    when it ends; a job that runs again has no end. `stopping`: a cancelled job a worker still runs gets its end
    time when the worker stops (JobQuerySet.stop_cancelled)."""
    if to == JobStatus.RUNNING:
        return {"started_at": started_at, "ended_at": None}
    if to == JobStatus.QUEUED:
        return {"ended_at": None}
    return {} if stopping else {"ended_at": now}


class JobQuerySet(models.QuerySet[Any]):
    """Compare-and-set moves for many rows at once (usually one, by pk), for workers that race a cancel."""

    def transition(self, to: str, **fields: Any) -> int:
        """Move the rows among these that may go to `to` (TRANSITIONS), with their timestamps and `fields`, in one
        UPDATE; the others keep their status. Returns how many moved. The caller refreshes what it holds."""
        assert to in TRANSITIONS, f"unknown job status {to!r}"
        assert not _LIFE_CYCLE_FIELDS & fields.keys(), f"{sorted(_LIFE_CYCLE_FIELDS & fields.keys())} are set by the move itself"
        now = timezone.now()
        started = Coalesce("started_at", models.Value(now, output_field=models.DateTimeField()))
        return self.filter(status__in=transition_sources(to)).update(status=to, **_stamps(to, started_at=started, now=now), **fields)

    def stop_cancelled(self, **fields: Any) -> int:
        """The cancelled rows among these get their end time (and `fields`): the worker saw the cancel and stopped."""
        assert not _LIFE_CYCLE_FIELDS & fields.keys(), f"{sorted(_LIFE_CYCLE_FIELDS & fields.keys())} are set by the stop itself"
        return self.filter(status=JobStatus.CANCELLED).update(ended_at=timezone.now(), **fields)


JobManager = models.Manager.from_queryset(JobQuerySet)


class Job(models.Model):
    """A unit of background work; its own fields say what the work is, these say how it went.

    The `mark_*` methods are the only way its status changes on one row. Each saves at once, with update_fields:
    the status, its timestamps and the `fields` the caller passes go in one write, so no caller can move a status
    and forget its time, or save a half-moved row; and only those columns are written, so a worker's save never
    undoes what another wrote meanwhile (a cancel flag, progress). An illegal move raises Conflict
    "illegal_transition" and changes nothing.
    """

    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = JobManager()

    class Meta:
        abstract = True

    def mark_running(self, **fields: Any) -> None:
        """Started, or resumed (from running after a crash, or from failed): started_at stays the first start."""
        self._move(JobStatus.RUNNING, fields)

    def mark_finished(self, **fields: Any) -> None:
        self._move(JobStatus.FINISHED, fields)

    def mark_failed(self, error: Any, **fields: Any) -> None:
        """`error`: text, or for an ImportJob the structured {code, message} it answers with."""
        self._move(JobStatus.FAILED, {"error": error, **fields})

    def mark_cancelled(self, *, stopping: bool = False, **fields: Any) -> None:
        """`stopping`: a worker still runs it and stops at its next check; its end time comes then (stop_cancelled)."""
        self._move(JobStatus.CANCELLED, fields, stopping=stopping)

    def mark_queued(self, **fields: Any) -> None:
        """A failed job queued to run again (improve's loop_resume): it has no end time until it ends again."""
        self._move(JobStatus.QUEUED, fields)

    def _move(self, to: str, fields: dict[str, Any], *, stopping: bool = False) -> None:
        assert not _LIFE_CYCLE_FIELDS & fields.keys(), f"{sorted(_LIFE_CYCLE_FIELDS & fields.keys())} are set by the move itself"
        if not transition_allowed(self.status, to):
            name = type(self).__name__
            raise Conflict(
                "illegal_transition",
                f"{name} {self.pk} is {self.status}; it cannot become {to}",
                job=self.pk,
                current=str(self.status),
                requested=str(to),
            )
        values = {**_stamps(to, started_at=self.started_at or timezone.now(), now=timezone.now(), stopping=stopping), **fields}
        self.status = to
        for name, value in values.items():
            setattr(self, name, value)
        self.save(update_fields=["status", *values])


def job_user(user: Any) -> Any:
    """The user to record as `created_by`: an anonymous or missing user is recorded as nobody."""
    return user if getattr(user, "is_authenticated", False) else None
