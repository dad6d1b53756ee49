"""Launching and cancelling from the console: training runs, checkpoint evaluations, evaluations and rollouts.

Every form goes through the same services as the API (lab.runs.services, lab.rollouts.evaluations,
lab.rollouts.services), so a launch from a page and from the API make the same rows. A refused form is the
page again with the values kept and the message beside the offending field (status 400); a launch goes to the
new object's page. Cancel answers htmx with the refreshed status fragment and a plain post with a redirect.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.console.views.common import console_view, is_htmx, page, visible_projects
from lab.console.views.jobs import (
    evaluation_detail_context,
    evaluation_get,
    evaluation_list_context,
    run_detail_context,
    run_get,
    run_list_context,
)
from lab.console.views.launch_forms import (
    DATASET_FIELDS,
    config_parse,
    env_of,
    error_fields,
    launch_project,
    require_write,
    seed_parse,
    seeds_parse,
)
from lab.errors import DomainError, NotFound
from lab.rollouts.evaluations import checkpoint_evaluate, evaluation_cancel, evaluation_launch
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import rollout_cancel, rollout_launch
from lab.runs.models import Checkpoint
from lab.runs.services import run_cancel, run_create

RUN_FIELDS = ("project", "name", "recipe", "base_model", "config", "dataset")
EVALUATION_FIELDS = ("project", "agent", "task_set", "seeds")
ROLLOUT_FIELDS = ("project", "agent", "task", "seed")


def _refused(exc: DomainError, known: tuple[str, ...]) -> dict[str, str]:
    """Field errors for a form; 403 and 404 are not the form's fault and go up as error pages."""
    if exc.status in (403, 404) and exc.code in ("forbidden", "not_found"):
        raise exc
    return error_fields(exc, known)


# --- training runs ------------------------------------------------------------------------------------------------


@require_POST
@console_view
def run_new(request: HttpRequest) -> HttpResponse:
    post = request.POST
    try:
        project = launch_project(request, "start training runs")
        filters = {name: post.get(f"dataset-{name}", "").strip() for name in DATASET_FIELDS}
        run = run_create(project=project, recipe=post.get("recipe", ""), base_model=post.get("base_model", "").strip(),
                         config=config_parse(post.get("config", "")), dataset_filters=filters, name=post.get("name", "").strip(),
                         user=request.user)  # fmt: skip
    except DomainError as exc:
        if exc.code in ("invalid_filter", "empty_dataset"):
            errors = {"dataset": exc.message}
        else:
            errors = _refused(exc, RUN_FIELDS)
            errors = {("config" if field not in RUN_FIELDS else field): message for field, message in errors.items()}
        context = run_list_context(request, form=post, errors=errors)
        return page(request, "console/runs.html", context, status=400)
    return redirect("run", pk=run.pk)


@require_POST
@console_view
def run_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_get(request, pk)
    require_write(request, run.project, "cancel training runs")
    run = run_cancel(run=run)
    if is_htmx(request):
        return page(request, "console/_run_status.html", run_detail_context(request, run))
    return redirect("run", pk=run.pk)


@require_POST
@console_view
def checkpoint_evaluate_view(request: HttpRequest, pk: int, checkpoint_id: int) -> HttpResponse:
    run = run_get(request, pk)
    checkpoint = Checkpoint.objects.filter(pk=checkpoint_id, run=run).first()
    if checkpoint is None:
        raise NotFound("not_found", f"Run {run.pk} has no checkpoint {checkpoint_id}.")
    require_write(request, run.project, "evaluate checkpoints")
    task_set = request.POST.get("task_set", "").strip()
    try:
        env_of(task_set)
        evaluation = checkpoint_evaluate(checkpoint=checkpoint, task_set=task_set, seeds=seeds_parse(request.POST.get("seeds", "")),
                                         user=request.user)  # fmt: skip
    except DomainError as exc:
        context = run_detail_context(request, run, eval_form=request.POST, eval_errors=_refused(exc, ("task_set", "seeds")),
                                     eval_checkpoint=checkpoint.pk)  # fmt: skip
        return page(request, "console/run_detail.html", context, status=400)
    return redirect("evaluation", pk=evaluation.pk)


# --- evaluations --------------------------------------------------------------------------------------------------


@require_POST
@console_view
def evaluation_new(request: HttpRequest) -> HttpResponse:
    post = request.POST
    try:
        project = launch_project(request, "run evaluations")
        seeds = seeds_parse(post.get("seeds", ""))
        evaluation = evaluation_launch(project=project, agent=post.get("agent", "").strip(), task_set=post.get("task_set", "").strip(),
                                       seeds=seeds, user=request.user)  # fmt: skip
    except DomainError as exc:
        errors = {"agent": exc.message} if exc.code == "unknown_agent" else _refused(exc, EVALUATION_FIELDS)
        context = evaluation_list_context(request, form=post, errors=errors)
        return page(request, "console/evaluations.html", context, status=400)
    return redirect("evaluation", pk=evaluation.pk)


@require_POST
@console_view
def evaluation_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = evaluation_get(request, pk)
    require_write(request, evaluation.project, "cancel evaluations")
    evaluation = evaluation_cancel(evaluation=evaluation)
    if is_htmx(request):
        return page(request, "console/_evaluation_status.html", evaluation_detail_context(request, evaluation))
    return redirect("evaluation", pk=evaluation.pk)


# --- rollouts -----------------------------------------------------------------------------------------------------


@require_POST
@console_view
def rollout_new(request: HttpRequest) -> HttpResponse:
    """Start one rollout; the episodes page then shows the queued job (its episode appears when a worker starts it)."""
    from lab.console.views.episodes import episode_list_context

    try:
        post = request.POST
        project, seed = launch_project(request, "run rollouts"), seed_parse(post.get("seed", ""))
        job = rollout_launch(project=project, agent=post.get("agent", "").strip(), task=post.get("task", "").strip(), seed=seed,
                             user=request.user)  # fmt: skip
    except DomainError as exc:
        errors = {"agent": exc.message} if exc.code == "unknown_agent" else _refused(exc, ROLLOUT_FIELDS)
        context = episode_list_context(request, rollout_form=request.POST, rollout_errors=errors)
        return page(request, "console/episodes.html", context, status=400)
    return redirect(f"/episodes/?rollout={job.pk}")


@require_POST
@console_view
def rollout_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    job = RolloutJob.objects.filter(pk=pk, project__in=visible_projects(request)).select_related("project").first()
    if job is None:
        raise NotFound("not_found", f"No rollout {pk} that you can see.")
    require_write(request, job.project, "cancel rollouts")
    job = rollout_cancel(job=job)
    return redirect("episode", pk=job.episode_id) if job.episode_id else redirect(f"/episodes/?rollout={job.pk}")
