"""Training runs and evaluations: status, live progress, metric charts, checkpoints and their results."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from lab.console.views.launch_forms import DATASET_FIELDS, launch_context, recipe_fields, write_projects
from lab.errors import NotFound
from lab.live.models import StreamCounter
from lab.pages import console_view, page, role_of, visible_projects
from lab.projects.models import WRITE_ROLES
from lab.rollouts.models import Evaluation
from lab.runs.models import RunMetric, TrainingRun


def run_list_context(request: HttpRequest, *, form: Any = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    """The runs table and, for owners and researchers, the "New training run" form (values and field errors)."""
    runs = TrainingRun.objects.filter(project__in=visible_projects(request)).select_related("project")[:200]
    form = form or {}
    return {"runs": runs, "launch_projects": write_projects(request), "recipes": recipe_fields(), "form": form, "errors": errors or {},
            "dataset_inputs": [(name, form.get(f"dataset-{name}", "")) for name in DATASET_FIELDS]}  # fmt: skip


@console_view
def run_list(request: HttpRequest) -> HttpResponse:
    return page(request, "console/runs.html", run_list_context(request), fragment="console/_run_rows.html")


def run_get(request: HttpRequest, pk: int) -> TrainingRun:
    run = TrainingRun.objects.filter(pk=pk, project__in=visible_projects(request)).select_related("project").first()
    if run is None:
        raise NotFound("not_found", f"No training run {pk} that you can see.")
    return run


def run_detail_context(request: HttpRequest, run: TrainingRun, *, eval_form: Any = None, eval_errors: dict[str, str] | None = None,
                       eval_checkpoint: int | None = None) -> dict[str, Any]:  # fmt: skip
    """The run page; the checkpoint whose "Evaluate" form was refused (`eval_checkpoint`) shows its values and errors."""
    last_seq = StreamCounter.objects.filter(stream=f"run:{run.pk}").values_list("last_seq", flat=True).first() or 0
    names = list(RunMetric.objects.filter(run=run).values_list("name", flat=True).distinct().order_by("name"))
    return {"run": run, "checkpoints": run.checkpoints.prefetch_related("evaluations"), "metric_names": names, "last_seq": last_seq,
            "live": run.status in ("queued", "running"), "may_write": role_of(request, run.project) in WRITE_ROLES,
            "eval_form": eval_form or {}, "eval_errors": eval_errors or {}, "eval_checkpoint": eval_checkpoint}  # fmt: skip


@console_view
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_get(request, pk)
    context = run_detail_context(request, run)
    return page(request, "console/run_detail.html", context, fragment="console/_run_status.html")


@console_view
def run_metrics(request: HttpRequest, pk: int) -> JsonResponse:
    """{name: [[step, ...], [value, ...]]}: the columns uPlot draws."""
    run = run_get(request, pk)
    series: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
    for name, step, value in RunMetric.objects.filter(run=run).order_by("name", "step").values_list("name", "step", "value"):
        series[name][0].append(step)
        series[name][1].append(value)
    return JsonResponse({"metrics": series})


def evaluation_list_context(request: HttpRequest, *, form: Any = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    evaluations = Evaluation.objects.filter(project__in=visible_projects(request)).select_related("agent", "checkpoint")[:200]
    return {"evaluations": evaluations, **launch_context(request), "form": form or {}, "errors": errors or {}}


@console_view
def evaluation_list(request: HttpRequest) -> HttpResponse:
    return page(request, "console/evaluations.html", evaluation_list_context(request), fragment="console/_evaluation_rows.html")


def evaluation_get(request: HttpRequest, pk: int) -> Evaluation:
    evaluation = Evaluation.objects.filter(pk=pk, project__in=visible_projects(request)).select_related("agent", "checkpoint").first()
    if evaluation is None:
        raise NotFound("not_found", f"No evaluation {pk} that you can see.")
    return evaluation


def evaluation_detail_context(request: HttpRequest, evaluation: Evaluation) -> dict[str, Any]:
    episodes = evaluation.episodes.select_related("task").order_by("task__key", "seed")[:500]
    aggregate = evaluation.aggregate or {}
    return {"evaluation": evaluation, "episodes": episodes, "aggregate": aggregate, "per_task": aggregate.get("per_task") or [],
            "live": evaluation.status in ("queued", "running"), "may_write": role_of(request, evaluation.project_id) in WRITE_ROLES}  # fmt: skip


@console_view
def evaluation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = evaluation_get(request, pk)
    context = evaluation_detail_context(request, evaluation)
    return page(request, "console/evaluation_detail.html", context, fragment="console/_evaluation_status.html")
