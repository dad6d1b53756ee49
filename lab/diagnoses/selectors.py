"""Reads of diagnoses and diagnosis jobs for the pages, always scoped to the projects a caller can see, and the
cached step credit of a finished episode."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import QuerySet

from lab.diagnoses.analysis import episode_step_credit
from lab.diagnoses.models import Diagnosis, DiagnosisAttempt, DiagnosisJob
from lab.edge import int_param
from lab.projects.selectors import visible_get
from lab.trajectories.models import Episode, EpisodeStatus

CREDIT_CACHE_SECONDS = 24 * 3600
DIAGNOSIS_FILTERS = ("category", "origin", "verification", "task", "episode")


def episode_credit_cached(*, episode: Episode) -> dict[int, float]:
    """{step index: credit} of a finished episode (sums to 1 over agent steps); {} while it runs or has no steps.

    Cached per finished episode: its steps never change after that, and the viewer asks on every page load."""
    if episode.status == EpisodeStatus.RUNNING or not episode.step_count:
        return {}
    # The content hash (or creation time) keeps a reused id from ever reading another episode's credit.
    key = f"console:episode-credit:{episode.pk}:{episode.step_count}:{episode.content_hash or episode.created_at.timestamp()}"
    credit = cache.get(key)
    if credit is None:
        credit = {row["index"]: row["credit"] for row in episode_step_credit(episode=episode)["credit"]}
        cache.set(key, credit, timeout=CREDIT_CACHE_SECONDS)
    return credit


def diagnosis_list(*, projects: QuerySet, filters: dict[str, Any]) -> QuerySet[Diagnosis]:
    """Diagnoses of the projects' episodes; `filters` by category, origin, verification, task ("env/key" or "key")
    and episode id (ignored unless it is a number); empty values filter nothing."""
    diagnoses = Diagnosis.objects.filter(episode__project__in=projects).select_related("episode__task", "author")
    for name in ("category", "origin", "verification"):
        if filters.get(name):
            diagnoses = diagnoses.filter(**{name: filters[name]})
    if filters.get("task"):
        diagnoses = diagnoses.filter(episode__task__key=str(filters["task"]).rpartition("/")[2])
    if str(filters.get("episode") or "").isdigit():
        diagnoses = diagnoses.filter(episode_id=int_param(filters["episode"], name="episode"))
    return diagnoses


def diagnosis_list_with_children(*, projects: QuerySet, filters: dict[str, Any]) -> QuerySet[Diagnosis]:
    """diagnosis_list with each diagnosis's child episodes (the replays that verified it) loaded alongside."""
    return diagnosis_list(projects=projects, filters=filters).prefetch_related("child_episodes")


def diagnosis_attempt_list(*, projects: QuerySet, episode_id: int | None = None, job_id: int | None = None) -> QuerySet[DiagnosisAttempt]:
    """The diagnosis attempts on the projects' episodes, of one episode and of one job when those are given."""
    attempts = DiagnosisAttempt.objects.filter(episode__project__in=projects)
    if episode_id is not None:
        attempts = attempts.filter(episode_id=episode_id)
    if job_id is not None:
        attempts = attempts.filter(job_id=job_id)
    return attempts


def diagnosis_list_for_episode(*, episode: Episode) -> QuerySet[Diagnosis]:
    return Diagnosis.objects.filter(episode=episode).select_related("author")


def diagnosis_get(*, projects: QuerySet, pk: int) -> Diagnosis:
    diagnoses = Diagnosis.objects.filter(episode__project__in=projects).select_related("episode__task")
    return visible_get(diagnoses, pk=pk, what="diagnosis")


def diagnosis_job_list(*, projects: QuerySet) -> QuerySet[DiagnosisJob]:
    """The diagnosis jobs of `projects`, newest first (DiagnosisJob.Meta.ordering)."""
    return DiagnosisJob.objects.filter(project__in=projects).select_related("agent", "project")


def diagnosis_job_get(*, projects: QuerySet, pk: int) -> DiagnosisJob:
    return visible_get(DiagnosisJob.objects.filter(project__in=projects).select_related("agent", "project"), pk=pk, what="diagnosis job")


def diagnosis_job_diagnoses(*, job: DiagnosisJob) -> QuerySet[Diagnosis]:
    """The job's diagnoses: those its diagnoser wrote, or for a verify-only job the existing ones it replayed."""
    if job.agent_id or job.rule_anchor:
        diagnoses = Diagnosis.objects.filter(attempt__job=job)
    else:
        diagnoses = Diagnosis.objects.filter(episode_id__in=job.episode_ids)
    return diagnoses.select_related("episode__task").prefetch_related("child_episodes").order_by("episode_id", "step_index", "id")
