"""Training runs: the list with the "New training run" form, a run's page (status, live progress, uPlot metric
charts, checkpoints and their evaluations), starting and cancelling a run, evaluating a checkpoint.

Every form goes through the same services as the API (lab.runs.services), so a launch from a page and from the
API make the same rows. A refused form is the page again with the values kept and the message beside the
offending field (status 400); a launch goes to the new object's page. Cancel answers htmx with the refreshed
status fragment and a plain post with a redirect.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.console.views.launch_forms import (
    DATASET_FIELDS,
    JobPage,
    config_parse,
    env_of,
    job_post,
    launch_project,
    launch_project_get,
    recipe_fields,
    refused_fields,
    require_write,
    seeds_parse,
)
from lab.errors import DomainError
from lab.live.services import live_last_seq
from lab.pages import console_view, page, role_of, visible_projects, write_projects
from lab.projects.models import WRITE_ROLES
from lab.rollouts.evaluations import checkpoint_evaluate
from lab.runs.models import TrainingRun
from lab.runs.selectors import (
    checkpoint_get,
    checkpoint_list,
    config_settings,
    run_get,
    run_list,
    run_metric_names,
    run_metric_series,
    run_off_policy_steps,
)
from lab.runs.services import dataset_preview, run_cancel, run_config_validate, run_create

RUN_FIELDS = ("project", "name", "recipe", "base_model", "config", "dataset")


def run_list_context(request: HttpRequest, *, form: Any = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    """The runs table and, for owners and researchers, the "New training run" form (values and field errors)."""
    runs = run_list(projects=visible_projects(request))[:200]
    form = form or {}
    return {
        "runs": runs,
        "launch_projects": write_projects(request),
        "recipes": recipe_fields(),
        "form": form,
        "errors": errors or {},
        "dataset_inputs": [(name, form.get(f"dataset-{name}", "")) for name in DATASET_FIELDS],
    }


@console_view
def run_list_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/runs.html", run_list_context(request), fragment="console/_run_rows.html")


def run_detail_context(
    request: HttpRequest,
    run: TrainingRun,
    *,
    eval_form: Any = None,
    eval_errors: dict[str, str] | None = None,
    eval_checkpoint: int | None = None,
) -> dict[str, Any]:
    """The run page; the checkpoint whose "Evaluate" form was refused (`eval_checkpoint`) shows its values and errors."""
    last_seq = live_last_seq(stream=f"run:{run.pk}")
    spec = run.dataset_spec or {}
    return {
        "run": run,
        "settings": config_settings(run.config),
        "dataset_filters": config_settings({k: v for k, v in spec.items() if k not in ("include_partial", "skipped")}),
        "dataset_skipped": sorted((reason, len(ids)) for reason, ids in (spec.get("skipped") or {}).items()),
        "off_policy_steps": run_off_policy_steps(run=run),
        "checkpoints": checkpoint_list(run=run),
        "metric_names": run_metric_names(run=run),
        "last_seq": last_seq,
        "live": run.status in ("queued", "running"),
        "may_write": role_of(request, run.project) in WRITE_ROLES,
        "eval_form": eval_form or {},
        "eval_errors": eval_errors or {},
        "eval_checkpoint": eval_checkpoint,
    }


@console_view
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_get(projects=visible_projects(request), pk=pk)
    context = run_detail_context(request, run)
    return page(request, "console/run_detail.html", context, fragment="console/_run_live.html")


@console_view
def run_metrics(request: HttpRequest, pk: int) -> JsonResponse:
    """{name: [[step, ...], [value, ...]]}: the columns uPlot draws."""
    run = run_get(projects=visible_projects(request), pk=pk)
    series = run_metric_series(run=run)
    return JsonResponse({"metrics": {name: [columns["steps"], columns["values"]] for name, columns in series.items()}})


@require_POST
@console_view
def run_new(request: HttpRequest) -> HttpResponse:
    post = request.POST
    try:
        project = launch_project(request, "start training runs")
        filters = {name: post.get(f"dataset-{name}", "").strip() for name in DATASET_FIELDS}
        run = run_create(
            project=project,
            recipe=post.get("recipe", ""),
            base_model=post.get("base_model", "").strip(),
            config=config_parse(post.get("config", "")),
            dataset_filters=filters,
            name=post.get("name", "").strip(),
            user=request.user,
            include_partial=post.get("include_partial") == "on",
        )
    except DomainError as exc:
        if exc.code in ("invalid_filter", "empty_dataset", "no_training_data"):
            errors = {"dataset": exc.message}
        else:
            errors = refused_fields(exc, RUN_FIELDS)
            errors = {("config" if field not in RUN_FIELDS else field): message for field, message in errors.items()}
        context = run_list_context(request, form=post, errors=errors)
        return page(request, "console/runs.html", context, status=400)
    return redirect("run", pk=run.pk)


@console_view
def run_dataset_preview(request: HttpRequest) -> HttpResponse:
    """The episodes the form's dataset filters match, the partial demonstrations among them marked (each with how it
    was cut short) and what the chosen recipe would skip and why: the form's "Check the dataset" button (htmx; without
    JavaScript the runs page with the list under the form)."""
    query = request.GET
    context = run_list_context(request, form=query)
    try:
        project = launch_project_get(request, query.get("project", ""), "start training runs")
        filters = {name: query.get(f"dataset-{name}", "").strip() for name in DATASET_FIELDS}
        recipe = query.get("recipe", "")
        config = config_parse(query.get("config", ""))
        full = run_config_validate(recipe=recipe, base_model=query.get("base_model", "").strip() or "<base model>", config=config)
        context["preview"] = dataset_preview(
            project=project, recipe=recipe, config=full, filters=filters, include_partial=query.get("include_partial") == "on"
        )
    except DomainError as exc:
        if exc.status in (403, 404):
            raise
        context["preview"] = {"error": exc.message}
    return page(request, "console/runs.html", context, fragment="console/_run_dataset.html")


@require_POST
@console_view
def run_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    answer = JobPage("console/_run_live.html", run_detail_context, "run")
    return job_post(request, pk, get=run_get, action="cancel training runs", act=lambda run: run_cancel(run=run), answer=answer)


@require_POST
@console_view
def checkpoint_evaluate_view(request: HttpRequest, pk: int, checkpoint_id: int) -> HttpResponse:
    run = run_get(projects=visible_projects(request), pk=pk)
    checkpoint = checkpoint_get(run=run, pk=checkpoint_id)
    require_write(request, run.project, "evaluate checkpoints")
    task_set = request.POST.get("task_set", "").strip()
    try:
        env_of(task_set)
        evaluation = checkpoint_evaluate(
            checkpoint=checkpoint, task_set=task_set, seeds=seeds_parse(request.POST.get("seeds", "")), user=request.user
        )
    except DomainError as exc:
        context = run_detail_context(
            request, run, eval_form=request.POST, eval_errors=refused_fields(exc, ("task_set", "seeds")), eval_checkpoint=checkpoint.pk
        )
        return page(request, "console/run_detail.html", context, status=400)
    return redirect("evaluation", pk=evaluation.pk)
