"""Training runs and evaluations: status, live progress, metric charts, checkpoints and their results."""

from __future__ import annotations

from collections import defaultdict

from django.http import HttpRequest, HttpResponse, JsonResponse

from lab.console.views.common import console_view, page, visible_projects
from lab.errors import NotFound
from lab.live.models import StreamCounter
from lab.rollouts.models import Evaluation
from lab.runs.models import RunMetric, TrainingRun


@console_view
def run_list(request: HttpRequest) -> HttpResponse:
    runs = TrainingRun.objects.filter(project__in=visible_projects(request)).select_related("project")[:200]
    return page(request, "console/runs.html", {"runs": runs}, fragment="console/_run_rows.html")


def _run(request: HttpRequest, pk: int) -> TrainingRun:
    run = TrainingRun.objects.filter(pk=pk, project__in=visible_projects(request)).select_related("project").first()
    if run is None:
        raise NotFound("not_found", f"No training run {pk} that you can see.")
    return run


@console_view
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    last_seq = StreamCounter.objects.filter(stream=f"run:{run.pk}").values_list("last_seq", flat=True).first() or 0
    names = list(RunMetric.objects.filter(run=run).values_list("name", flat=True).distinct().order_by("name"))
    context = {"run": run, "checkpoints": run.checkpoints.all(), "metric_names": names, "last_seq": last_seq,
               "live": run.status in ("queued", "running")}  # fmt: skip
    return page(request, "console/run_detail.html", context, fragment="console/_run_status.html")


@console_view
def run_metrics(request: HttpRequest, pk: int) -> JsonResponse:
    """{name: [[step, ...], [value, ...]]}: the columns uPlot draws."""
    run = _run(request, pk)
    series: dict[str, list[list[float]]] = defaultdict(lambda: [[], []])
    for name, step, value in RunMetric.objects.filter(run=run).order_by("name", "step").values_list("name", "step", "value"):
        series[name][0].append(step)
        series[name][1].append(value)
    return JsonResponse({"metrics": series})


@console_view
def evaluation_list(request: HttpRequest) -> HttpResponse:
    evaluations = Evaluation.objects.filter(project__in=visible_projects(request)).select_related("agent", "checkpoint")[:200]
    return page(request, "console/evaluations.html", {"evaluations": evaluations}, fragment="console/_evaluation_rows.html")


@console_view
def evaluation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = Evaluation.objects.filter(pk=pk, project__in=visible_projects(request)).select_related("agent", "checkpoint").first()
    if evaluation is None:
        raise NotFound("not_found", f"No evaluation {pk} that you can see.")
    episodes = evaluation.episodes.select_related("task").order_by("task__key", "seed")[:500]
    aggregate = evaluation.aggregate or {}
    context = {"evaluation": evaluation, "episodes": episodes, "aggregate": aggregate,
               "per_task": aggregate.get("per_task") or [], "live": evaluation.status in ("queued", "running")}  # fmt: skip
    return page(request, "console/evaluation_detail.html", context, fragment="console/_evaluation_status.html")
