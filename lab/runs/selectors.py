"""Reads of training runs: the caller's runs, a run's metric series and checkpoints."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import QuerySet

from lab.errors import NotFound
from lab.runs.models import Checkpoint, RunMetric, TrainingRun


def run_list(*, projects: QuerySet) -> QuerySet[TrainingRun]:
    return TrainingRun.objects.filter(project__in=projects).select_related("project").prefetch_related("checkpoints")


def run_get(*, projects: QuerySet, pk: int | str) -> TrainingRun:
    run = run_list(projects=projects).filter(pk=pk).first() if str(pk).isdigit() else None
    if run is None:
        raise NotFound("not_found", f"No training run {pk} that you can see.")
    return run


def run_metric_series(*, run: TrainingRun, names: list[str] | None = None) -> dict[str, dict[str, list[Any]]]:
    """{name: {"steps": [...], "values": [...]}} in step order; `names` limits the series returned."""
    rows = RunMetric.objects.filter(run=run)
    if names:
        rows = rows.filter(name__in=names)
    series: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {"steps": [], "values": []})
    for name, step, value in rows.order_by("name", "step").values_list("name", "step", "value"):
        series[name]["steps"].append(step)
        series[name]["values"].append(value)
    return dict(series)


def checkpoint_get(*, run: TrainingRun, pk: int | str) -> Checkpoint:
    checkpoint = run.checkpoints.filter(pk=pk).first() if str(pk).isdigit() else None
    if checkpoint is None:
        raise NotFound("not_found", f"No checkpoint {pk} in run {run.pk}.")
    return checkpoint
