"""External runs: a run trained elsewhere (TRL, verl, a plain torch loop) that reports into the lab.

    run = external_run_create(project=p, name="trl sft", recipe="trl-sft", base_model="Qwen/Qwen3-0.6B", config={...},
                              user=u, provenance="external")                      # running at once; nothing is queued
    external_metrics_report(run=run, metrics=[{"step": 10, "values": {"loss": 0.7}}], progress=0.1)  # -> should_stop
    external_checkpoint_report(run=run, step=100, path="s3://bucket/ckpt-100", eval_results={"toolgym/lookup": 0.8})
    external_run_finish(run=run, status="finished")

Its metrics are the same RunMetric rows and "run:<id>" stream events a native run's worker writes
(lab.runs.services.run_metrics_record), so the run page draws them live with the same charts. The console cancels
it the way it cancels any run (run_cancel sets `cancelled`); nothing here can stop a process elsewhere, so the
trainer reads the flag (`should_stop` in every report's answer) and stops itself. Its provenance is the sender's
tier (lab.trajectories.imports.upload_provenance), never `recorded`: what it reports is its word, and its
checkpoints name files this server does not hold, so they cannot be evaluated here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from lab.edge import fields_check, text_problem
from lab.errors import Conflict, DomainError, RateLimited
from lab.jobs import TERMINAL, JobStatus, job_user
from lab.live.services import live_publish
from lab.projects.models import Project
from lab.projects.throttle import rate_spend
from lab.runs.models import Checkpoint, TrainingRun
from lab.runs.paths import reported_path_check
from lab.runs.services import run_metrics_record, run_status_set, run_stream
from lab.trajectories.models import Provenance

MAX_POINTS_PER_REPORT = 1000  # (step, values) entries in one report; a reporter sends more in several
MAX_VALUES_PER_POINT = 100
MAX_JSON_BYTES = 64 * 1024  # an external run's config, or one checkpoint's eval_results
MAX_STEP = 2**31 - 1  # RunMetric.step and Checkpoint.step are PositiveIntegerFields
ENDINGS = (JobStatus.FINISHED, JobStatus.FAILED)


def _json_small(value: Any, field: str) -> Any:
    if len(json.dumps(value, default=str)) > MAX_JSON_BYTES:
        raise DomainError("too_large", f"{field} is larger than {MAX_JSON_BYTES} bytes as JSON", fields=[field])
    return value


def _step(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_STEP:
        raise DomainError("invalid_metrics", f"{field}={value!r}: a step is an integer in [0, {MAX_STEP}]", fields=[field])
    return value


def external_run_create(
    *, project: Project, name: str, recipe: str, base_model: str, config: Mapping[str, Any], user: Any, provenance: str
) -> TrainingRun:
    """A running run that the trainer elsewhere reports into; `recipe` is the trainer's own label (trl-sft, verl-grpo, ...)."""
    assert provenance in (Provenance.EXTERNAL, Provenance.UPLOAD), f"an external run is reported, never {provenance!r}"
    recipe = recipe.strip() or "external"
    fields_check(TrainingRun, name=name, recipe=recipe, base_model=base_model)
    config = dict(_json_small(config, "config"))
    with transaction.atomic():
        run = TrainingRun.objects.create(
            project=project,
            name=name.strip() or f"{recipe} (external)"[:200],
            recipe=recipe,
            base_model=base_model.strip(),
            config=config,
            provenance=provenance,
            status=JobStatus.RUNNING,
            started_at=timezone.now(),
            created_by=job_user(user),
        )
        live_publish(stream=run_stream(run), kind="status", payload={"status": run.status, "progress": run.progress})
    return run


def _external(run: TrainingRun, verb: str) -> None:
    if not run.reported:
        raise Conflict("not_external", f"run {run.pk} is trained by the lab's worker; only an external run can {verb}")
    if run.status in ENDINGS:
        raise Conflict("run_ended", f"run {run.pk} is {run.status}; it takes no more reports")


def _points(metrics: Any) -> dict[int, dict[str, float]]:
    """[{"step": N, "values": {name: number}}] as {step: {name: value}}, or DomainError naming the offending entry."""
    if not isinstance(metrics, list) or not metrics:
        raise DomainError("invalid_metrics", "metrics must be a non-empty list of {step, values}", fields=["metrics"])
    if len(metrics) > MAX_POINTS_PER_REPORT:
        raise DomainError(
            "too_large", f"{len(metrics)} metric points; at most {MAX_POINTS_PER_REPORT} per report", fields=["metrics"], status=413
        )
    rows = sum(len(p["values"]) for p in metrics if isinstance(p, dict) and isinstance(p.get("values"), dict))
    if rows > settings.PRACTICUM_METRIC_ROWS_PER_REPORT:
        raise DomainError(
            "too_large",
            f"{rows} metric values; at most {settings.PRACTICUM_METRIC_ROWS_PER_REPORT} values per report "
            "(PRACTICUM_METRIC_ROWS_PER_REPORT): send them in several",
            fields=["metrics"],
            status=413,
        )
    pending: dict[int, dict[str, float]] = {}
    for i, point in enumerate(metrics):
        where = f"metrics[{i}]"
        if not isinstance(point, dict) or not isinstance(point.get("values"), dict) or not point["values"]:
            raise DomainError("invalid_metrics", f"{where} must be an object with `step` and non-empty `values`", fields=[where])
        step = _step(point.get("step"), f"{where}.step")
        if len(point["values"]) > MAX_VALUES_PER_POINT:
            raise DomainError(
                "too_large", f"{where}.values has {len(point['values'])} metrics; at most {MAX_VALUES_PER_POINT}", fields=[where]
            )
        for name, value in point["values"].items():
            field = f"{where}.values.{name}"
            why = text_problem(name) or ("" if 0 < len(name) <= 64 else "is not 1 to 64 characters long")
            if why:
                raise DomainError("invalid_metrics", f"{field}: the metric name {why}", fields=[field])
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise DomainError("invalid_metrics", f"{field}={value!r}: must be a finite number", fields=[field])
            pending.setdefault(step, {})[name] = float(value)
    return pending


def external_metrics_report(*, run: TrainingRun, metrics: Any, progress: Any = None, body_bytes: int = 0) -> dict[str, Any]:
    """Record a batch of the trainer's metrics; the answer tells it whether the console asked it to stop.

    A resent batch adds nothing twice (a (name, step) the run has is kept as first reported). Reports still land
    after a cancel: the trainer's last steps before it reads the flag are real. Bounded: `body_bytes` (the request's
    size) and the values per report (413), and the values per run per minute (429 RateLimited, with Retry-After)."""
    _external(run, "report metrics")
    if body_bytes > settings.PRACTICUM_METRIC_REPORT_BYTES:
        raise DomainError(
            "too_large",
            f"the report is {body_bytes} bytes; at most {settings.PRACTICUM_METRIC_REPORT_BYTES} bytes (PRACTICUM_METRIC_REPORT_BYTES)",
            status=413,
        )
    pending = _points(metrics)
    rows = sum(len(values) for values in pending.values())
    wait = rate_spend(scope="metric_rows", ident=str(run.pk), amount=rows, per_minute=settings.PRACTICUM_METRIC_ROWS_PER_MINUTE)
    if wait:
        raise RateLimited(
            f"run {run.pk} reported more than {settings.PRACTICUM_METRIC_ROWS_PER_MINUTE} metric values this minute "
            f"(PRACTICUM_METRIC_ROWS_PER_MINUTE); retry in {wait} s",
            retry_after=wait,
        )
    if progress is not None and (isinstance(progress, bool) or not isinstance(progress, (int, float)) or not 0 <= progress <= 1):
        raise DomainError("invalid_metrics", f"progress={progress!r}: a fraction in [0, 1]", fields=["progress"])
    written = run_metrics_record(run_id=run.pk, pending=pending, progress=None if progress is None else float(progress), skip_existing=True)
    run.refresh_from_db(fields=["status", "progress"])
    return {"recorded": written, "status": run.status, "should_stop": run.status == JobStatus.CANCELLED}


def external_checkpoint_report(*, run: TrainingRun, step: Any, path: Any, eval_results: Any) -> Checkpoint:
    """Record (or update) the checkpoint at `step`: where the trainer keeps it, and its own evaluation results."""
    _external(run, "report checkpoints")
    step = _step(step, "step")
    if not isinstance(path, str) or not isinstance(eval_results, dict):
        raise DomainError("invalid_checkpoint", "path must be a string and eval_results an object", fields=["path", "eval_results"])
    fields_check(Checkpoint, path=path)
    reported_path_check(project=run.project, value=path, field="path")  # checked again whenever anything loads it
    _json_small(eval_results, "eval_results")
    with transaction.atomic():
        checkpoint, _ = Checkpoint.objects.update_or_create(run=run, step=step, defaults={"path": path, "eval_results": eval_results})
        live_publish(stream=run_stream(run), kind="checkpoint", payload={"id": checkpoint.pk, "step": step, "path": path})
    return checkpoint


def external_run_finish(*, run: TrainingRun, status: str, error: str = "") -> TrainingRun:
    """End the run as the trainer saw it end. A run the console cancelled stays cancelled and gets its end time."""
    if not run.reported:
        raise Conflict("not_external", f"run {run.pk} is trained by the lab's worker; only an external run can be finished by its trainer")
    if status not in ENDINGS:
        raise DomainError("invalid_status", f"status={status!r}; use finished or failed", fields=["status"])
    if not isinstance(error, str) or len(error) > 4000:
        raise DomainError("invalid_status", "error must be a string of at most 4000 characters", fields=["error"])
    if run.status in TERMINAL and (run.status != JobStatus.CANCELLED or run.ended_at is not None):
        return run  # a repeat of the finish (a retry that lost its answer) changes nothing
    extra = {"progress": 1.0} if status == JobStatus.FINISHED else {}
    return run_status_set(run, status, error=error, **extra)
