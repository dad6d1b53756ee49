"""Compare training runs, native and external, on the same charts: one chart per metric with a series per run, and
a table of each run's last values. The runs page's checkboxes submit a plain GET form here, so it works without JS.

`?ids=3,7,9` (or `ids=3&ids=7`, as the form sends it) names 2 to 8 runs; `?metric=loss,kl` picks up to 4 metrics,
else the charts show the metrics every run logs. The page's charts read `compare.json` with the same query, the
way a run's page reads its `metrics.json`.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.http import urlencode

from lab.edge import id_param, text_problem
from lab.errors import DomainError
from lab.pages import console_view, page, visible_projects
from lab.runs.models import RunMetric
from lab.runs.selectors import MAX_COMPARED_METRICS, MAX_COMPARED_RUNS, RunComparison, run_compare

METRIC_NAME_MAX = RunMetric._meta.get_field("name").max_length or 64


def _pieces(values: list[str]) -> list[str]:
    return [piece.strip() for value in values for piece in value.split(",") if piece.strip()]


def compare_ids_parse(values: list[str]) -> list[int]:
    """The `ids` query values as distinct run ids, in the order given."""
    pieces = _pieces(values)
    if len(pieces) > MAX_COMPARED_RUNS * 4:  # refuse before parsing a huge list
        raise DomainError("invalid_parameter", f"ids names {len(pieces)} runs; compare at most {MAX_COMPARED_RUNS}", path="ids")
    ids = list(dict.fromkeys(id_param(piece, name="ids") for piece in pieces))
    if len(ids) < 2:
        raise DomainError(
            "invalid_parameter",
            f"ids names {len(ids)} run; name 2 to {MAX_COMPARED_RUNS}: /runs/compare?ids=3,7 (or tick runs on the runs page)",
            path="ids",
        )
    if len(ids) > MAX_COMPARED_RUNS:
        raise DomainError("invalid_parameter", f"ids names {len(ids)} runs; compare at most {MAX_COMPARED_RUNS}", path="ids")
    return ids


def compare_metrics_parse(values: list[str]) -> list[str]:
    """The `metric` query values as distinct metric names; empty means "the metrics the runs share"."""
    names = list(dict.fromkeys(_pieces(values)))
    for name in names:
        problem = text_problem(name) or (
            f"is {len(name)} characters long; at most {METRIC_NAME_MAX}" if len(name) > METRIC_NAME_MAX else None
        )
        if problem:
            raise DomainError("invalid_parameter", f"metric {name[:50]!r} {problem}", path="metric")
    if len(names) > MAX_COMPARED_METRICS:
        raise DomainError("invalid_parameter", f"metric names {len(names)} metrics; chart at most {MAX_COMPARED_METRICS}", path="metric")
    return names


def _comparison(request: HttpRequest) -> RunComparison:
    ids = compare_ids_parse(request.GET.getlist("ids"))
    metrics = compare_metrics_parse(request.GET.getlist("metric"))
    return run_compare(projects=visible_projects(request), ids=ids, metrics=metrics)


def _label(run: Any) -> str:
    return f"{run.name} #{run.pk} ({run.provenance})"


@console_view
def run_compare_page(request: HttpRequest) -> HttpResponse:
    comparison = _comparison(request)
    query = urlencode({"ids": ",".join(str(run.pk) for run in comparison.runs), "metric": ",".join(comparison.metrics)})
    rows = [{"run": run, "last": [comparison.last[run.pk][name] for name in comparison.metrics]} for run in comparison.runs]
    context = {"comparison": comparison, "rows": rows, "query": query}
    return page(request, "console/run_compare.html", context)


@console_view
def run_compare_metrics(request: HttpRequest) -> JsonResponse:
    """{"labels": [one per run], "metrics": {name: [[step, ...], [run 1 value or null, ...], ...]}}: uPlot's columns."""
    comparison = _comparison(request)
    return JsonResponse(
        {"labels": [_label(run) for run in comparison.runs], "runs": [run.pk for run in comparison.runs], "metrics": comparison.columns}
    )
