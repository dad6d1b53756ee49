"""Reads of training runs: the caller's runs, a run's metric series and checkpoints."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Max, Q, QuerySet

from lab.errors import DomainError, NotFound
from lab.jobs import JobStatus
from lab.runs.models import Checkpoint, RunMetric, TrainingRun


def run_list(*, projects: QuerySet) -> QuerySet[TrainingRun]:
    return TrainingRun.objects.filter(project__in=projects).select_related("project").prefetch_related("checkpoints")


def run_list_active(*, projects: QuerySet) -> QuerySet[TrainingRun]:
    """The runs of `projects` still queued or running, newest first."""
    return TrainingRun.objects.filter(project__in=projects, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).order_by("-created_at")


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


def run_metric_names(*, run: TrainingRun) -> list[str]:
    """The names of the metrics the run logged, sorted."""
    return list(RunMetric.objects.filter(run=run).values_list("name", flat=True).distinct().order_by("name"))


def run_off_policy_steps(*, run: TrainingRun, limit: int = 50) -> list[int]:
    """The steps the on-policy check flagged (training.engine: sampled logprobs differ from the trainer's above the
    threshold), the first `limit`."""
    flagged = RunMetric.objects.filter(run=run, name="onpolicy_warning", value__gt=0).order_by("step")
    return list(flagged.values_list("step", flat=True)[:limit])


def checkpoint_list(*, run: TrainingRun) -> QuerySet[Checkpoint]:
    """The run's checkpoints with their evaluations."""
    return run.checkpoints.prefetch_related("evaluations")


def checkpoint_map(*, pks: list[int]) -> dict[int, Checkpoint]:
    """{pk: checkpoint} for `pks` a row of the caller's already names (an improvement loop's dev evaluations)."""
    return Checkpoint.objects.in_bulk(pks)


def checkpoint_get(*, run: TrainingRun, pk: int | str) -> Checkpoint:
    checkpoint = run.checkpoints.filter(pk=pk).first() if str(pk).isdigit() else None
    if checkpoint is None:
        raise NotFound("not_found", f"No checkpoint {pk} in run {run.pk}.")
    return checkpoint


# --- comparing runs -------------------------------------------------------------------------------------------

MAX_COMPARED_RUNS = 8
MAX_COMPARED_METRICS = 4


@dataclass
class RunComparison:
    runs: list[TrainingRun]
    """In the order the caller named them."""
    metrics: list[str]
    """The charted metrics: the ones asked for, else those every run logs (at most MAX_COMPARED_METRICS)."""
    logged: list[str]
    """Every metric any of the runs logs, for the "pick a metric" hint."""
    columns: dict[str, list[list[Any]]]
    """{metric: [steps, run 1 values, run 2 values, ...]}: uPlot's aligned columns over the union of the runs' steps,
    None where a run has no value at that step."""
    last: dict[int, dict[str, float | None]]
    """{run id: {metric: value at the run's highest step, or None}}."""
    final: dict[str, list[float | None]] = field(default_factory=dict)
    """{metric: [each run's value at its highest step of that metric, or None]} for every logged metric."""
    config_rows: list[tuple[str, list[str]]] = field(default_factory=list)
    """(dotted config key, [each run's value as JSON, "—" where it lacks the key]) for the keys whose values differ."""
    config_same: list[tuple[str, str]] = field(default_factory=list)
    """(dotted config key, value) for the keys every run sets alike."""


def run_compare(*, projects: QuerySet, ids: list[int], metrics: list[str] | None = None) -> RunComparison:
    """Several runs' metrics on common axes. A run outside `projects` is NotFound by its id alone (its name never
    shows); a named metric none of the runs logs is a DomainError listing the ones they do."""
    assert 0 < len(ids) <= MAX_COMPARED_RUNS, f"{len(ids)} run ids; the edge allows 1..{MAX_COMPARED_RUNS}"
    found = run_list(projects=projects).in_bulk(ids)
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise NotFound("not_found", f"No training run {missing[0]} that you can see.")
    runs = [found[pk] for pk in ids]
    names_by_run: dict[int, set[str]] = {pk: set() for pk in ids}
    # order_by() drops the model's ordering: DISTINCT would otherwise run over (run, name, step).
    for run_id, name in RunMetric.objects.filter(run__in=ids).order_by().values_list("run_id", "name").distinct():
        names_by_run[run_id].add(name)
    logged = sorted(set().union(*names_by_run.values()))
    if metrics:
        for name in metrics:
            if name not in logged:
                raise DomainError(
                    "invalid_metric",
                    f"metric={name!r} is logged by none of runs {', '.join(map(str, ids))}; they log: {', '.join(logged) or 'nothing yet'}",
                    path="metric",
                )
    else:
        metrics = sorted(set.intersection(*names_by_run.values()))[:MAX_COMPARED_METRICS]
    # {metric: {run id: {step: value}}}; one query over at most 8 runs x 4 metrics (fine below ~10^5 rows per series)
    points: dict[str, dict[int, dict[int, float]]] = {name: {pk: {} for pk in ids} for name in metrics}
    rows = RunMetric.objects.filter(run__in=ids, name__in=metrics).order_by().values_list("name", "run_id", "step", "value")
    for name, run_id, step, value in rows:
        points[name][run_id][step] = value
    columns: dict[str, list[list[Any]]] = {}
    for name, by_run in points.items():
        steps = sorted(set().union(*by_run.values()))
        columns[name] = [steps, *([by_run[pk].get(step) for step in steps] for pk in ids)]
    last = {pk: {name: (points[name][pk][max(points[name][pk])] if points[name][pk] else None) for name in metrics} for pk in ids}
    differ, same = config_diff([run.config for run in runs])
    return RunComparison(
        runs=runs,
        metrics=metrics,
        logged=logged,
        columns=columns,
        last=last,
        final=final_values(ids, logged),
        config_rows=differ,
        config_same=same,
    )


def final_values(ids: list[int], logged: list[str]) -> dict[str, list[float | None]]:
    """{metric: [value at the run's highest step of it, or None, per run in `ids`]}: two queries, whatever the history."""
    highest = RunMetric.objects.filter(run__in=ids).order_by().values("run_id", "name").annotate(step=Max("step"))
    wanted = Q()
    for row in highest:
        wanted |= Q(run_id=row["run_id"], name=row["name"], step=row["step"])
    found: dict[tuple[int, str], float] = {}
    if highest:
        for run_id, name, value in RunMetric.objects.filter(wanted).order_by().values_list("run_id", "name", "value"):
            found[(run_id, name)] = value
    return {name: [found.get((pk, name)) for pk in ids] for name in logged}


def _flatten(config: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(config, dict) and config:
        out: dict[str, str] = {}
        for key, value in config.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): json.dumps(config, sort_keys=True, default=str)}


def config_settings(config: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(dotted key, value as JSON) for each setting of one config, by key: a run page's table, as compare shows them."""
    return sorted(_flatten(config).items()) if config else []


def config_diff(configs: list[dict[str, Any]]) -> tuple[list[tuple[str, list[str]]], list[tuple[str, str]]]:
    """(keys whose values differ with each run's value, keys alike with their value), nested keys dotted."""
    flat = [_flatten(config or {}) if config else {} for config in configs]
    keys = sorted(set().union(*flat))
    differ = [(key, [f.get(key, "—") for f in flat]) for key in keys if len({f.get(key, "—") for f in flat}) > 1]
    same = [(key, flat[0][key]) for key in keys if all(f.get(key, "—") == flat[0].get(key) for f in flat)]
    return differ, same
