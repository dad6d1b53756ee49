"""Rollouts from the console: start one (the episodes page then shows the queued job) and cancel one.

The form goes through the same service as the API (lab.rollouts.services.rollout_launch); a refused form is the
episodes page again with its values and the message beside the field (400).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.console.views.episodes import episode_list_context
from lab.console.views.launch_forms import launch_project, refused_fields, require_write, seed_parse
from lab.errors import DomainError
from lab.pages import console_view, page, visible_projects
from lab.rollouts.selectors import rollout_job_get
from lab.rollouts.services import rollout_cancel, rollout_launch

ROLLOUT_FIELDS = ("project", "agent", "task", "seed")


@require_POST
@console_view
def rollout_new(request: HttpRequest) -> HttpResponse:
    """Start one rollout; the episodes page then shows the queued job (its episode appears when a worker starts it)."""
    try:
        post = request.POST
        project, seed = launch_project(request, "run rollouts"), seed_parse(post.get("seed", ""))
        job = rollout_launch(
            project=project, agent=post.get("agent", "").strip(), task=post.get("task", "").strip(), seed=seed, user=request.user
        )
    except DomainError as exc:
        errors = {"agent": exc.message} if exc.code == "unknown_agent" else refused_fields(exc, ROLLOUT_FIELDS)
        context = episode_list_context(request, rollout_form=request.POST, rollout_errors=errors)
        return page(request, "console/episodes.html", context, status=400)
    return redirect(f"/episodes/?rollout={job.pk}")


@require_POST
@console_view
def rollout_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    job = rollout_job_get(projects=visible_projects(request), pk=pk)
    require_write(request, job.project, "cancel rollouts")
    job = rollout_cancel(job=job)
    return redirect("episode", pk=job.episode_id) if job.episode_id else redirect(f"/episodes/?rollout={job.pk}")
