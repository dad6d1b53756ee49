"""What every background job shares: one status vocabulary and one abstract base model.

Rollouts, evaluations, training runs, imports and diagnosis jobs all inherit `Job`, so a status, an error,
who started it and when read the same everywhere. This module belongs to no app (an abstract model needs
none): any app may import it without importing another app, which is what used to tie rollouts to runs.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED)


class Job(models.Model):
    """A unit of background work; its own fields say what the work is, these say how it went."""

    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


def job_user(user: Any) -> Any:
    """The user to record as `created_by`: an anonymous or missing user is recorded as nobody."""
    return user if getattr(user, "is_authenticated", False) else None
