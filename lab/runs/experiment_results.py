"""Committed experiment result files (training/results/<experiment>/, training/experiments/results.py) as finished
training runs of a project, so that the console's runs list and runs comparison show them beside the runs trained
here: `manage.py import_results PROJECT [EXPERIMENT ...]`.

Each run file becomes one run named `<experiment>/<arm>/<file stem>` with provenance `upload` (the lab did not train
it on this server), its recipe, its base's identity as the base model, its recipe config with where it came from
(experiment, arm, grid point, seed, commit, file), and its figures as metrics at its last step: the mean reward and
pass rate of each evaluation split, the agent's valid-call rate where recorded, and the numbers of its last training
metrics. Importing again skips the runs the project already has (by name), so a growing series can be imported as
it grows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.dateparse import parse_datetime

from lab.jobs import JobStatus
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
from lab.trajectories.models import Provenance

METRIC_NAME_MAX = 64


def run_metrics(record: dict[str, Any]) -> dict[str, float]:
    """The figures a result file holds, as run metrics (module docstring)."""
    metrics: dict[str, float] = {}
    for split, evaluation in sorted(record.get("evaluations", {}).items()):
        episodes = evaluation.get("episodes") or []
        if episodes:
            metrics[f"{split} reward"] = sum(float(e["reward"]) for e in episodes) / len(episodes)
            metrics[f"{split} pass rate"] = sum(1.0 for e in episodes if e.get("passed")) / len(episodes)
            rates = [float(e["valid_call_rate"]) for e in episodes if "valid_call_rate" in e]
            if rates:
                metrics[f"{split} valid call rate"] = sum(rates) / len(rates)
        for name, value in sorted((evaluation.get("measures") or {}).items()):
            if isinstance(value, int | float):
                metrics[f"{split} {name}"[:METRIC_NAME_MAX]] = float(value)
    for name, value in sorted((record.get("last_metrics") or {}).items()):
        if isinstance(value, int | float) and not isinstance(value, bool):
            metrics[f"train {name}"[:METRIC_NAME_MAX]] = float(value)
    return metrics


def experiment_runs_import(*, project: Project, records: list[dict[str, Any]]) -> tuple[list[TrainingRun], int]:
    """(the runs created, how many records the project already had) for run records as tables.load_files reads them."""
    created, skipped = [], 0
    for record in records:
        name = f"{record['experiment']}/{record['arm']}/{Path(record['file']).stem}"[:200]
        if TrainingRun.objects.filter(project=project, name=name).exists():
            skipped += 1
            continue
        base = record.get("base") or {}
        finished = parse_datetime(str(record.get("finished_at", ""))) if record.get("finished_at") else None
        where = {k: record.get(k) for k in ("experiment", "arm", "point", "seed", "config_hash", "definition", "commit", "file")}
        with transaction.atomic():
            run = TrainingRun.objects.create(
                project=project,
                name=name,
                recipe=str(record.get("recipe", "none"))[:32],
                base_model=(f"{base.get('name', '')}@{base['hash']}" if base.get("hash") else str(base.get("name", "")))[:500],
                config={**(record.get("config") or {}), "imported_from": where},
                provenance=Provenance.UPLOAD,
                status=JobStatus.FINISHED,
                started_at=finished,
                ended_at=finished,
                progress=1.0,
            )
            step = int(record.get("steps") or 0)
            RunMetric.objects.bulk_create([RunMetric(run=run, step=step, name=n, value=v) for n, v in run_metrics(record).items()])
        created.append(run)
    return created, skipped
