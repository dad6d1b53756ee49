"""Batch diagnosis jobs: over many failed episodes, diagnose, label pivotal steps and verify, with progress.

    job = diagnosis_job_launch(project=p, episode_ids=[...], agent=a, verify=True)  # queued; a task runs it after commit
    diagnosis_job_run(job_id=job.pk, progress=callback)     # what the Celery task and `manage.py diagnose` call

Per episode: a model diagnosis (when the job has an agent) or a rule diagnosis (when it names a rule anchor),
else the episode's existing unverified diagnoses; then its pivotal step (when asked); then verification of
each diagnosis with a correction. One episode's failure is recorded in the summary and the job moves on.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from django.db import DatabaseError, transaction

from environments.core import EnvError
from environments.policies import policy_names
from lab.diagnoses.analysis import diagnosis_propose_model, diagnosis_propose_rule, episode_label_pivotal
from lab.diagnoses.models import Diagnosis, DiagnosisAttempt, DiagnosisJob, Verification
from lab.diagnoses.verification import diagnosis_verify
from lab.errors import DomainError
from lab.jobs import JobStatus, job_user
from lab.live.services import live_publish
from lab.projects.models import Project
from lab.trajectories.endpoints import agent_connection
from lab.trajectories.models import AgentConfig, Episode

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


def diagnosis_job_launch(
    *,
    project: Project,
    episode_ids: Any,
    agent: AgentConfig | None = None,
    rule_anchor: str = "",
    pivotal_anchor: str = "",
    verify: bool = True,
    user: Any = None,
    enqueue: bool = True,
) -> DiagnosisJob:
    """The one way a DiagnosisJob is made: validate, store it queued and (unless `enqueue` is off, for a caller
    that runs it inline) enqueue it after commit."""
    if not isinstance(episode_ids, list) or not episode_ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in episode_ids):
        raise DomainError("invalid_episodes", f"episodes must be a non-empty list of episode ids, got {episode_ids!r}", path="episodes")
    if len(episode_ids) > 10_000:
        raise DomainError("invalid_episodes", f"at most 10000 episodes per job, got {len(episode_ids)}", path="episodes")
    episodes = Episode.objects.filter(project=project, pk__in=episode_ids).select_related("task")
    missing = sorted(set(episode_ids) - {e.pk for e in episodes})
    if missing:
        raise DomainError("not_found", f"no episode(s) {missing[:10]} in project {project.slug}", status=404, path="episodes")
    if agent is not None and agent.project_id != project.pk:
        raise DomainError("not_found", f"no agent {agent.name!r} in project {project.slug}", status=404, path="agent")
    if agent is not None:
        agent_connection(agent=agent)  # a disabled agent or a refused endpoint is refused now, not per episode later
    if agent is not None and rule_anchor:
        raise DomainError("invalid_job", "give a model agent or a rule anchor, not both", path="rule_anchor")
    for name, field in ((rule_anchor, "rule_anchor"), (pivotal_anchor, "pivotal_anchor")):
        for env in {e.task.env for e in episodes} if name else ():
            if name not in policy_names(env):
                raise DomainError(
                    "unknown_anchor", f"{name!r} is not a policy of {env}; choose one of {', '.join(policy_names(env))}", path=field
                )
    if agent is None and not rule_anchor and not pivotal_anchor and not verify:
        raise DomainError("invalid_job", "the job would do nothing: give an agent or a rule anchor, a pivotal anchor, or verify")
    job = DiagnosisJob.objects.create(
        project=project,
        episode_ids=list(dict.fromkeys(episode_ids)),
        agent=agent,
        rule_anchor=rule_anchor,
        pivotal_anchor=pivotal_anchor,
        verify=verify,
        total=len(set(episode_ids)),
        created_by=job_user(user),
    )
    if enqueue:
        transaction.on_commit(lambda: diagnosis_job_enqueue(job))
    return job


def diagnosis_job_enqueue(job: DiagnosisJob) -> None:
    from lab.diagnoses.tasks import run_diagnosis_job

    run_diagnosis_job.delay(job.pk)


def _publish(job: DiagnosisJob) -> None:
    live_publish(stream=f"diagnosis-job:{job.pk}", kind="progress", payload={"done": job.done, "total": job.total, "status": job.status})


def _diagnose_one(job: DiagnosisJob, episode: Episode) -> list[Diagnosis]:
    if job.agent is not None:
        attempt = diagnosis_propose_model(episode=episode, agent=job.agent, job=job)
        return [attempt.diagnosis] if attempt.diagnosis else []
    if job.rule_anchor:
        attempt = diagnosis_propose_rule(episode=episode, anchor=job.rule_anchor, job=job)
        return [attempt.diagnosis] if attempt.diagnosis else []
    return list(episode.diagnoses.filter(verification=Verification.UNVERIFIED, correction__isnull=False))


def diagnosis_job_run(*, job_id: int, progress: Progress | None = None) -> DiagnosisJob:
    """Run a job over its episodes. A bug or a lost service ends it as failed with the error, never left running;
    a database error propagates so the Celery task retries."""
    job = DiagnosisJob.objects.select_related("agent", "project").get(pk=job_id)
    if job.status in (JobStatus.FINISHED, JobStatus.CANCELLED):
        return job  # a redelivered message after the job completed: nothing to redo
    try:
        return _run(job, progress)
    except DatabaseError:
        raise
    except Exception as exc:
        log.exception("diagnosis job %s failed", job.pk)
        job.mark_failed(f"{type(exc).__name__}: {exc}"[:2000])
        _publish(job)
        return job


def _run(job: DiagnosisJob, progress: Progress | None) -> DiagnosisJob:
    job.mark_running(done=0)
    _publish(job)
    errors: list[dict[str, Any]] = []
    episodes = {
        e.pk: e for e in Episode.objects.filter(project=job.project, pk__in=job.episode_ids).select_related("task", "agent", "project")
    }
    # A job found running (its worker died) resumes: an episode this job already answered is not diagnosed again,
    # only its diagnoses that were not verified yet are.
    answered = set(job.attempts.values_list("episode_id", flat=True)) if (job.agent_id or job.rule_anchor) else set()
    for episode_id in job.episode_ids:
        episode = episodes.get(episode_id)
        try:
            if episode is None:
                raise DomainError("not_found", f"episode {episode_id} no longer exists")
            if episode_id in answered:
                pending = (Verification.UNVERIFIED, Verification.RUNNING)
                diagnoses = list(Diagnosis.objects.filter(attempt__job=job, episode_id=episode_id, verification__in=pending))
            else:
                diagnoses = _diagnose_one(job, episode)
            if job.pivotal_anchor and not episode.passed:
                episode_label_pivotal(episode=episode, anchor=job.pivotal_anchor)
            if job.verify:
                for diagnosis in diagnoses:
                    if diagnosis.correction:
                        diagnosis_verify(diagnosis=diagnosis)
        except (DomainError, EnvError) as exc:
            errors.append({"episode": episode_id, "error": getattr(exc, "message", str(exc))})
        job.done += 1
        job.save(update_fields=["done"])
        _publish(job)
        if progress is not None:
            progress(job.done, job.total)
    summary = {
        **diagnosis_summary(
            Diagnosis.objects.filter(attempt__job=job)
            if (job.agent or job.rule_anchor)
            else Diagnosis.objects.filter(episode_id__in=job.episode_ids)
        ),
        "attempts": attempt_counts(job.attempts.all()),
        "errors": errors,
    }
    job.mark_finished(summary=summary)
    _publish(job)
    return job


def attempt_counts(attempts: Iterable[DiagnosisAttempt]) -> dict[str, int]:
    rows = list(attempts)
    return {
        "total": len(rows),
        "accepted": sum(1 for a in rows if a.diagnosis_id),
        "bad_answers": sum(1 for a in rows if not a.diagnosis_id),
    }


def diagnosis_summary(diagnoses: Iterable[Diagnosis]) -> dict[str, Any]:
    """Per category and overall: how many were verified, and the verifier pass rate of the retries vs the corrections."""
    groups: dict[str, list[Diagnosis]] = defaultdict(list)
    for diagnosis in diagnoses:
        groups[diagnosis.category].append(diagnosis)
        groups["all"].append(diagnosis)
    table = {}
    for category, rows in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        checked: list[dict[str, Any]] = [
            d.verification_result or {} for d in rows if d.verification in (Verification.VERIFIED, Verification.REFUTED)
        ]
        table[category] = {
            "diagnoses": len(rows),
            "verified": sum(1 for d in rows if d.verification == Verification.VERIFIED),
            "refuted": sum(1 for d in rows if d.verification == Verification.REFUTED),
            "failed": sum(1 for d in rows if d.verification == Verification.FAILED),
            "retry_pass_rate": _rate(r["retry"]["passed"] for r in checked),
            "correction_pass_rate": _rate(r["corrected"]["passed"] for r in checked),
            "mean_delta_composite": round(sum(r["delta_composite"] for r in checked) / len(checked), 6) if checked else None,
        }
    return {"by_category": table}


def _rate(flags: Iterable[bool]) -> float | None:
    values = list(flags)
    return round(sum(1 for v in values if v) / len(values), 6) if values else None
