"""Diagnosis jobs from the console: pick failed episodes, a diagnoser, a pivotal anchor and replay verification;
follow the job; read its before/after table and diagnoses; export them as JSONL.

The form goes through lab.diagnoses.jobs.diagnosis_job_launch, as the API's `jobs` action does, with the same
roles (owners and researchers: a job may call a model for every episode). A refused form is the page again with
its values and the message beside the field (400); a created job is queued on Celery and the browser goes to it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect

from environments.policies import policy_names
from lab.console.views.launch_forms import error_fields, require_write
from lab.diagnoses import selectors as diagnosis_selectors
from lab.diagnoses.exports import diagnoses_export_lines
from lab.diagnoses.jobs import attempt_counts, diagnosis_job_launch
from lab.diagnoses.models import DiagnosisJob
from lab.diagnoses.selectors import diagnosis_job_diagnoses, diagnosis_job_get
from lab.errors import DomainError, NotFound
from lab.jobs import JobStatus
from lab.pages import console_view, page, role_of, visible_projects, write_projects
from lab.projects.models import WRITE_ROLES, Project
from lab.trajectories.models import AgentConfig
from lab.trajectories.selectors import agent_find_by_name, agent_list_for_project, episode_list_failed

CANDIDATES = 50  # failed episodes offered by the form, newest first
JOB_FIELDS = ("project", "episodes", "diagnoser", "pivotal_anchor", "verify", "form")
SUMMARY_COLUMNS = ("diagnoses", "verified", "refuted", "failed", "retry_pass_rate", "correction_pass_rate", "mean_delta_composite")


def _form_project(request: HttpRequest, slug: str) -> Project | None:
    """The chosen project among those where the user may run jobs (the only one when there is one choice)."""
    projects = list(write_projects(request))
    if slug:
        return next((p for p in projects if p.slug == slug), None)
    return projects[0] if len(projects) == 1 else None


def job_form_context(request: HttpRequest, *, form: Any = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    form = form if form is not None else request.GET
    project = _form_project(request, form.get("project", ""))
    candidates = list(episode_list_failed(project=project, task=form.get("task", "").strip())[:CANDIDATES]) if project else []
    anchors = sorted({name for env in {e.task.env for e in candidates} for name in policy_names(env)})
    return {
        "job_projects": write_projects(request),
        "job_project": project,
        "candidates": candidates,
        "agents": agent_list_for_project(project=project) if project else [],
        "anchors": anchors,
        "form": form,
        "errors": errors or {},
        "selected": {str(v) for v in form.getlist("episodes")} if hasattr(form, "getlist") else set(),
        "jobs": diagnosis_selectors.diagnosis_job_list(projects=visible_projects(request))[:50],
    }


@console_view
def diagnosis_job_list(request: HttpRequest) -> HttpResponse:
    """GET: the form (its episode list filtered by ?project=&task=) and recent jobs; POST: create a job."""
    if request.method == "POST":
        return _job_create(request)
    return page(request, "console/diagnosis_jobs.html", job_form_context(request), fragment="console/_diagnosis_job_form.html")


def _diagnoser(project: Project, choice: str) -> tuple[AgentConfig | None, str]:
    """The form's `diagnoser`: "agent:<name>" (a model), "rule:<anchor>", or "" (verify existing diagnoses)."""
    kind, _, name = choice.partition(":")
    if not choice:
        return None, ""
    if kind == "agent":
        agent = agent_find_by_name(project=project, name=name)
        if agent is None:
            raise DomainError("not_found_agent", f"no agent {name!r} in project {project.slug}", path="diagnoser")
        return agent, ""
    if kind == "rule" and name:
        return None, name
    raise DomainError("invalid_diagnoser", f"diagnoser={choice!r}; choose an agent or a rule", path="diagnoser")


def _episode_ids(raw: list[str]) -> list[int]:
    bad = [value for value in raw if not value.isdigit()]
    if bad:
        raise DomainError("invalid_episodes", f"{bad[0]!r} is not an episode id", path="episodes")
    if not raw:
        raise DomainError("invalid_episodes", "select at least one episode", path="episodes")
    return [int(value) for value in raw]


def _job_create(request: HttpRequest) -> HttpResponse:
    post = request.POST
    project = visible_projects(request).filter(slug=post.get("project", "").strip()).first()
    if project is None:
        raise NotFound("not_found", f"No project {post.get('project', '')!r} that you can see.")
    require_write(request, project, "run diagnosis jobs")
    try:
        agent, rule_anchor = _diagnoser(project, post.get("diagnoser", "").strip())
        job = diagnosis_job_launch(
            project=project,
            episode_ids=_episode_ids(post.getlist("episodes")),
            agent=agent,
            rule_anchor=rule_anchor,
            pivotal_anchor=post.get("pivotal_anchor", "").strip(),
            verify=post.get("verify") == "on",
            user=request.user,
        )
    except DomainError as exc:
        errors = error_fields(exc, JOB_FIELDS)
        errors = {("diagnoser" if field in ("agent", "rule_anchor") else field): message for field, message in errors.items()}
        context = job_form_context(request, form=post, errors=errors)
        return page(request, "console/diagnosis_jobs.html", context, status=400)
    return redirect("diagnosis-job", pk=job.pk)


def _summary_rows(job: DiagnosisJob) -> list[dict[str, Any]]:
    table = (job.summary or {}).get("by_category") or {}
    return [{"category": category, **{name: row.get(name) for name in SUMMARY_COLUMNS}} for category, row in table.items()]


@console_view
def diagnosis_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page; an htmx poll (every 2 s while queued or running) gets the status-and-results fragment."""
    job = diagnosis_job_get(projects=visible_projects(request), pk=pk)
    live = job.status in (JobStatus.QUEUED, JobStatus.RUNNING)
    summary = job.summary or {}
    context = {
        "job": job,
        "live": live,
        "summary_rows": _summary_rows(job),
        "errors": summary.get("errors") or [],
        "attempts": summary.get("attempts") or attempt_counts(job.attempts.all()),
        "diagnoses": diagnosis_job_diagnoses(job=job)[:500],
        "may_write": role_of(request, job.project_id) in WRITE_ROLES,
    }
    return page(request, "console/diagnosis_job.html", context, fragment="console/_diagnosis_job_status.html")


@console_view
def diagnosis_job_export(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """The job's diagnoses as JSONL: ?view=diagnosis (prefix -> diagnosis) or recovery (prefix + correction -> continuation)."""
    job = diagnosis_job_get(projects=visible_projects(request), pk=pk)
    view = request.GET.get("view", "diagnosis")
    lines = diagnoses_export_lines(diagnoses=diagnosis_job_diagnoses(job=job), view=view)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="diagnosis-job-{job.pk}-{view}.jsonl"'
    return response
