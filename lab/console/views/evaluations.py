"""Evaluations: the list with the "New evaluation" form, an evaluation's page (live status, per-task results,
its episodes), starting and cancelling one, and the first-run demo (the anchors on the demo task, lab.rollouts.demo).

The form goes through the same services as the API (lab.rollouts.evaluations): a refused form is the page again
with its values and the message beside the field (400); a launch goes to the evaluation's page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from environments.registry import list_envs
from lab.console.views.launch_forms import JobPage, job_post, launch_context, launch_project, refused_fields, seeds_parse
from lab.errors import DomainError
from lab.pages import console_view, page, role_of, visible_projects
from lab.projects.models import WRITE_ROLES
from lab.rollouts.demo import demo_launch
from lab.rollouts.evaluations import attack_setting, evaluation_cancel, evaluation_launch
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episode_list, evaluation_failed_jobs, evaluation_get, evaluation_list

EVALUATION_FIELDS = ("project", "agent", "task_set", "seeds", "attack", "options")
MAX_FAILED_SHOWN = 20  # an evaluation of 500 seeds that all failed lists the first 20 and says how many more


def attack_choices() -> dict[str, Any]:
    """The attack setting the form offers: the styles of every environment whose metadata declares an attack axis
    (none when no environment has one, and then the form shows no attack setting)."""
    axes = [(meta.env, meta.attacks) for meta in list_envs() if meta.attacks]
    styles = list(dict.fromkeys(style for _, axis in axes for style in axis.styles))
    return {"attack_styles": styles, "attack_envs": [env for env, _ in axes], "attack_guidance": any(axis.guidance for _, axis in axes)}


def evaluation_list_context(request: HttpRequest, *, form: Any = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    evaluations = evaluation_list(projects=visible_projects(request))[:200]
    return {"evaluations": evaluations, **launch_context(request), **attack_choices(), "form": form or {}, "errors": errors or {}}


@console_view
def evaluation_list_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/evaluations.html", evaluation_list_context(request), fragment="console/_evaluation_rows.html")


def evaluation_detail_context(request: HttpRequest, evaluation: Evaluation) -> dict[str, Any]:
    live = evaluation.status in ("queued", "running")
    # While it runs, its jobs' episodes as they start (watchable live); once ended, the scored ones its figures count.
    episodes = evaluation_episode_list(evaluation=evaluation, live=live)
    aggregate = evaluation.aggregate or {}
    failed = evaluation_failed_jobs(evaluation=evaluation)
    failed_count = failed.count()
    return {
        "evaluation": evaluation,
        "failed_jobs": failed[:MAX_FAILED_SHOWN],
        "failed_count": failed_count,
        "failed_more": max(0, failed_count - MAX_FAILED_SHOWN),
        "episodes": episodes[:500],
        "live": live,
        "aggregate": aggregate,
        "per_task": aggregate.get("per_task") or [],
        "may_write": role_of(request, evaluation.project_id) in WRITE_ROLES,
    }


@console_view
def evaluation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = evaluation_get(projects=visible_projects(request), pk=pk)
    context = evaluation_detail_context(request, evaluation)
    return page(request, "console/evaluation_detail.html", context, fragment="console/_evaluation_status.html")


@require_POST
@console_view
def evaluation_new(request: HttpRequest) -> HttpResponse:
    post = request.POST
    try:
        project = launch_project(request, "run evaluations")
        seeds = seeds_parse(post.get("seeds", ""))
        task_set = post.get("task_set", "").strip()
        options = attack_setting(task_set=task_set, attack=post.get("attack", "").strip(), guidance=bool(post.get("guidance")))
        evaluation = evaluation_launch(
            project=project, agent=post.get("agent", "").strip(), task_set=task_set, seeds=seeds, user=request.user, options=options
        )
    except DomainError as exc:
        errors = {"agent": exc.message} if exc.code == "unknown_agent" else refused_fields(exc, EVALUATION_FIELDS)
        context = evaluation_list_context(request, form=post, errors=errors)
        return page(request, "console/evaluations.html", context, status=400)
    return redirect("evaluation", pk=evaluation.pk)


@require_POST
@console_view
def evaluation_demo(request: HttpRequest) -> HttpResponse:
    """The dashboard's and play page's one click: to the dashboard, where the episodes appear as they run."""
    project = launch_project(request, "run evaluations")
    demo_launch(project=project, user=request.user)
    return redirect("dashboard")


@require_POST
@console_view
def evaluation_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    answer = JobPage("console/_evaluation_status.html", evaluation_detail_context, "evaluation")
    return job_post(
        request, pk, get=evaluation_get, action="cancel evaluations", act=lambda e: evaluation_cancel(evaluation=e), answer=answer
    )
