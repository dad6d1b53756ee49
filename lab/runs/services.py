"""Training runs: launch (with the dataset frozen), execute through training.run_recipe, cancel, name checkpoints' agents.

    run = run_create(project=p, recipe="sft", base_model=path, config={"max_steps": 50},
                     dataset_filters={"task": "storebench/cold-snap", "passed": "true"}, user=u)   # queued
    run_execute(run_id=run.pk)        # the Celery task's body (gpu queue); also callable inline
    run_cancel(run=run)               # queued: cancelled at once; running: stops at the next step, with a checkpoint
    checkpoint_agent(checkpoint=c)    # the `hf` agent that evaluates a checkpoint (lab.rollouts.evaluations.checkpoint_evaluate)

The dataset is frozen at launch: the episode ids and a sha256 over their canonical records (exported with
lab.trajectories.services.episode_to_record). The worker exports the same episodes to a JSONL file, checks the
hash, and hands training the file: training never sees ORM objects. Metrics become RunMetric rows and live
events on the stream "run:<id>" (kind "metric", payload {name, step, value}; kind "progress"; kind
"checkpoint"); checkpoints become Checkpoint rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.db import transaction

import training
from environments.records import Record
from lab.edge import fields_check
from lab.errors import DomainError
from lab.jobs import TERMINAL, JobStatus
from lab.live.services import live_publish
from lab.projects.models import Project
from lab.runs.models import Checkpoint, RunMetric, TrainingRun
from lab.runs.paths import model_folder_check, model_path_confine, run_folder
from lab.runs.storage import checkpoint_store
from lab.trajectories.models import AgentConfig, AgentKind, Episode, EpisodeStatus
from lab.trajectories.selectors import FILTER_FIELDS, episode_list
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episode_headers
from training.dataset_check import partial_ending, record_skip_reason

log = logging.getLogger(__name__)

LAB_FIELDS = ("model", "output_dir", "data")  # set by the lab from base_model, the run folder and the frozen dataset


@dataclass(frozen=True)
class FrozenFile:
    """A dataset frozen as a JSONL file: what run_create stores and the worker checks before training on it."""

    path: str
    sha256: str
    episode_ids: tuple[int, ...] = ()


def run_stream(run: TrainingRun | int) -> str:
    return f"run:{run if isinstance(run, int) else run.pk}"


def _uses_dataset(recipe: str) -> bool:
    return "data" in training.recipe_config_class(recipe).__dataclass_fields__


def run_config_validate(*, recipe: str, base_model: str, config: Any) -> dict[str, Any]:
    """The recipe's full config as the worker will run it (lab fields filled with placeholders), or DomainError
    "invalid_config" naming the offending field(s) in `fields` and in the message."""
    if not isinstance(base_model, str) or not base_model.strip():
        raise DomainError("invalid_config", f"base_model={base_model!r}: give a from_pretrained path", fields=["base_model"])
    if not isinstance(config, dict):
        raise DomainError("invalid_config", f"config must be an object of recipe fields, got {type(config).__name__}", fields=["config"])
    reserved = sorted(set(config) & set(LAB_FIELDS))
    if reserved:
        raise DomainError("invalid_config", f"config.{reserved[0]} is set by the lab (base_model, run folder, dataset)", fields=reserved)
    try:
        placeholders = {"model": base_model, "output_dir": "<run folder>"}
        if _uses_dataset(recipe):
            placeholders["data"] = "<frozen dataset>"
        return training.make_config(recipe, {**config, **placeholders}).to_dict()
    except training.ConfigError as exc:
        raise DomainError("invalid_config", str(exc), fields=exc.fields or ["config"]) from None


def run_model_paths(*, project: Project, recipe: str, base_model: str, config: dict[str, Any]) -> dict[str, str]:
    """Every weights folder the run will read (base_model and the recipe's path fields such as resume_from or
    teacher), each confined to the model store and the project's checkpoints and resolved; keyed by config field."""
    given = {"model": ("base_model", base_model)}
    for name in training.recipe_config_class(recipe).MODEL_PATH_FIELDS:
        if name != "model" and config.get(name):
            given[name] = (f"config.{name}", config[name])
    paths = {name: model_path_confine(project=project, value=value, field=field) for name, (field, value) in given.items()}
    for name, (field, value) in given.items():  # every path confined first: a refusal never reveals what exists outside
        model_folder_check(path=paths[name], value=value, field=field)
    decode_budget_check(model_path=paths["model"], config=config)
    return paths


def decode_budget_check(*, model_path: str, config: dict[str, Any]) -> None:
    """A decode token budget the worker's memory cannot hold for this model is refused now, with the figure that
    fits, rather than when the engine is built mid-run. (An adapter folder has no config.json: the worker checks.)"""
    budget = config.get("decode_token_budget")
    if not budget or not isinstance(budget, int) or not (Path(model_path) / "config.json").exists():
        return
    from training.decode import folder_token_budget_problem

    problem = folder_token_budget_problem(model_path, budget)
    if problem:
        raise DomainError("token_budget_too_large", f"config.decode_token_budget: {problem}", fields=["config.decode_token_budget"])


def _frozen_episodes(*, project: Project, filters: dict[str, Any]) -> list[int]:
    unknown = sorted(set(filters) - set(FILTER_FIELDS))
    if unknown:
        raise DomainError("invalid_filter", f"unknown dataset filter {unknown[0]!r}; use {', '.join(FILTER_FIELDS)}", fields=unknown)
    projects = Project.objects.filter(pk=project.pk)
    episodes = episode_list(projects=projects, filters=filters).exclude(status=EpisodeStatus.RUNNING)  # still changing
    return list(episodes.order_by("pk").values_list("pk", flat=True))


def _records(episode_ids: Iterable[int]) -> Iterator[tuple[int, Record]]:
    """(id, canonical record) of the episodes in the given order, 200 at a time (bounded memory for large datasets)."""
    ids = list(episode_ids)
    for start in range(0, len(ids), 200):
        chunk = {e.pk: e for e in Episode.objects.filter(pk__in=ids[start : start + 200])}
        page = [chunk[pk] for pk in ids[start : start + 200]]
        for episode, header in zip(page, episode_headers(page), strict=True):
            yield episode.pk, episode_to_record(episode, header=header)


def dataset_export(episode_ids: Iterable[int], handle: IO[str] | None = None) -> str:
    """sha256 over the canonical records of the episodes, in id order; each record is written to `handle` as a JSONL line."""
    digest = hashlib.sha256()
    for _, record in _records(episode_ids):
        line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        digest.update(line.encode())
        if handle is not None:
            handle.write(line)
    return digest.hexdigest()


def dataset_screen(episode_ids: Iterable[int], *, recipe: str, config: dict[str, Any], include_partial: bool) -> DatasetScreen:
    """The episodes `recipe` can learn from, the others by reason (training.dataset_check), and the partial ones."""
    screen = DatasetScreen()
    for pk, record in _records(episode_ids):
        if partial_ending(record):
            screen.partial[pk] = partial_ending(record)
        reason = record_skip_reason(record, recipe=recipe, config=config, include_partial=include_partial)
        if reason:
            screen.skipped.setdefault(reason, []).append(pk)
        else:
            screen.kept.append(pk)
    return screen


@dataclass
class DatasetScreen:
    kept: list[int] = dataclasses.field(default_factory=list)
    skipped: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # reason -> episode ids
    partial: dict[int, str] = dataclasses.field(default_factory=dict)  # episode id -> how it was cut short

    def skipped_summary(self, shown: int = 10) -> str:
        """ "3 did not pass (passed_only=true): episodes 4, 7, 9; 1 no actor turns (...): episode 12", biggest first."""

        def ids(pks: list[int]) -> str:
            more = f" and {len(pks) - shown} more" if len(pks) > shown else ""
            return ("episode " if len(pks) == 1 else "episodes ") + ", ".join(map(str, pks[:shown])) + more

        ranked = sorted(self.skipped.items(), key=lambda item: (-len(item[1]), item[0]))
        return "; ".join(f"{len(pks)} {reason}: {ids(pks)}" for reason, pks in ranked)


def dataset_preview(
    *, project: Project, recipe: str, config: dict[str, Any], filters: dict[str, Any], include_partial: bool, shown: int = 100
) -> dict[str, Any]:
    """What run_create would freeze for these filters: the matching episodes (up to `shown`, partial ones marked with how
    they were cut short), the kept count and the skipped ones by reason."""
    filters = {k: v for k, v in filters.items() if v not in (None, "")}
    ids = _frozen_episodes(project=project, filters=filters)
    screen = (
        dataset_screen(ids, recipe=recipe, config=config, include_partial=include_partial)
        if _uses_dataset(recipe)
        else DatasetScreen(kept=ids)
    )
    episodes = Episode.objects.filter(pk__in=ids[:shown]).select_related("task").order_by("pk")
    return {
        "episodes": [{"episode": e, "partial": screen.partial.get(e.pk, "")} for e in episodes],
        "total": len(ids),
        "kept": len(screen.kept),
        "skipped": sorted(screen.skipped.items(), key=lambda item: (-len(item[1]), item[0])),
        "partial_count": len(screen.partial),
        "include_partial": include_partial,
        "uses_dataset": _uses_dataset(recipe),
    }


def run_create(
    *,
    project: Project,
    recipe: str,
    base_model: str,
    config: dict[str, Any],
    dataset_filters: dict[str, Any] | None = None,
    name: str = "",
    user: Any = None,
    enqueue: bool = True,
    dataset_file: FrozenFile | None = None,
    include_partial: bool = False,
) -> TrainingRun:
    """Validate, freeze the dataset (recipes that read one), store the run as queued and enqueue it after commit.
    `dataset_file` is a dataset frozen elsewhere (an improvement loop's): its path, sha256 and source episodes.
    The frozen dataset keeps the episodes the recipe can learn from (training.dataset_check): partial demonstrations
    only with `include_partial`; when none is left the run is refused with each skipped episode's reason."""
    fields_check(TrainingRun, name=name, base_model=base_model, recipe=recipe)
    if not isinstance(include_partial, bool):
        raise DomainError("invalid_config", f"include_partial={include_partial!r}: give true or false", fields=["include_partial"])
    full = run_config_validate(recipe=recipe, base_model=base_model, config=config)
    run_model_paths(project=project, recipe=recipe, base_model=base_model, config=config)
    filters = {k: v for k, v in (dataset_filters or {}).items() if v not in (None, "")}
    episode_ids: list[int] = []
    digest = ""
    if _uses_dataset(recipe) and dataset_file is not None:
        filters, episode_ids, digest = {"file": dataset_file.path}, list(dataset_file.episode_ids), dataset_file.sha256
    elif _uses_dataset(recipe):
        episode_ids = _frozen_episodes(project=project, filters=filters)
        if not episode_ids:
            raise DomainError("empty_dataset", f"no finished episodes match the dataset filters {filters}", fields=["dataset"])
        screen = dataset_screen(episode_ids, recipe=recipe, config=full, include_partial=include_partial)
        if not screen.kept:
            raise DomainError(
                "no_training_data",
                f"none of the {len(episode_ids)} episodes matching the dataset filters {filters} has "
                f"anything to train on: {screen.skipped_summary()}",
                fields=["dataset"],
                skipped=screen.skipped,
            )
        episode_ids = screen.kept
        # What the run leaves out and why, and whether it asked for partial demonstrations, stay with the run.
        filters = {**filters, "include_partial": include_partial, "skipped": screen.skipped}
        digest = dataset_export(episode_ids)
    name = name or f"{recipe} on {base_model.rstrip('/').rsplit('/', 1)[-1]}"[:200]
    run = TrainingRun.objects.create(
        project=project,
        name=name,
        recipe=recipe,
        config=config,
        base_model=base_model,
        dataset_spec=filters,
        episode_ids=episode_ids,
        dataset_hash=digest,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if enqueue:
        transaction.on_commit(lambda: run_enqueue(run))
    return run


def run_enqueue(run: TrainingRun) -> None:
    from lab.runs.tasks import execute_run

    execute_run.apply_async(args=[run.pk], queue="gpu")


def run_cancel(*, run: TrainingRun) -> TrainingRun:
    """A queued run is cancelled at once; a running one stops before its next step (saving a checkpoint)."""
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().get(pk=run.pk)
        if run.status in TERMINAL:
            return run
        run.mark_cancelled(stopping=run.started_at is not None)  # a worker that runs it stamps its end when it stops
        live_publish(stream=run_stream(run), kind="status", payload={"status": run.status, "progress": run.progress})
    return run


def run_metrics_record(*, run_id: int, pending: dict[int, dict[str, float]], progress: float | None, skip_existing: bool = False) -> int:
    """Store `pending` ({step: {name: value}}) as RunMetric rows, set the run's progress, and send each metric and
    the progress on the run's stream after commit; the number of rows written. `skip_existing` leaves out a
    (name, step) the run already has, so a reporter that resends a batch it got no answer for adds nothing twice."""
    if not pending:
        return 0
    stream = run_stream(run_id)
    with transaction.atomic():
        rows = [
            RunMetric(run_id=run_id, step=step, name=name[:64], value=value)
            for step, values in sorted(pending.items())
            for name, value in values.items()
        ]
        if skip_existing:
            have = set(RunMetric.objects.filter(run_id=run_id, step__in=list(pending)).values_list("name", "step"))
            rows = [row for row in rows if (row.name, row.step) not in have]
        RunMetric.objects.bulk_create(rows, batch_size=500)
        # The run's row before the stream's counter, the order run_cancel takes them in: the other order deadlocks
        # against a cancel arriving mid-flush (seen in CI).
        if progress is not None:
            TrainingRun.objects.filter(pk=run_id).update(progress=progress)
        for row in rows:
            live_publish(stream=stream, kind="metric", payload={"name": row.name, "step": row.step, "value": row.value})
        if progress is not None:
            live_publish(stream=stream, kind="progress", payload={"progress": progress, "step": max(pending)})
    return len(rows)


# --- execution (the Celery task's body) -------------------------------------------------------------------------


class RunRecorder:
    """training.run_recipe hooks that persist a run's metrics and checkpoints and answer cancellation.

    Trainer.log reports a step's metrics one by one, then the loop polls should_stop: the step's metrics are
    written (one transaction, events sent after commit) at that poll, at a checkpoint, or at the end.
    """

    def __init__(self, run: TrainingRun, max_steps: int) -> None:
        self.run_id, self.max_steps, self.stream = run.pk, max(1, max_steps), run_stream(run)
        self.pending: dict[int, dict[str, float]] = {}

    def on_metric(self, step: int, name: str, value: float) -> None:
        self.pending.setdefault(step, {})[name] = value

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, {}
        run_metrics_record(run_id=self.run_id, pending=pending, progress=min(1.0, max(pending) / self.max_steps))

    def on_checkpoint(self, step: int, folder: str) -> None:
        self.flush()
        checkpoint_store().push(folder)  # before the row: a recorded checkpoint is one every machine can pull
        with transaction.atomic():
            checkpoint, _ = Checkpoint.objects.update_or_create(run_id=self.run_id, step=step, defaults={"path": folder})
            live_publish(stream=self.stream, kind="checkpoint", payload={"id": checkpoint.pk, "step": step, "path": folder})

    def should_stop(self) -> bool:
        self.flush()
        return TrainingRun.objects.filter(pk=self.run_id, status=JobStatus.CANCELLED).exists()


def run_execute(*, run_id: int) -> TrainingRun:
    """Run a queued run to its end. A run found `running` (its worker died) resumes from its last checkpoint."""
    run = TrainingRun.objects.get(pk=run_id)
    if run.status in TERMINAL:
        return run
    folder = run_folder(run)
    folder.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {**run.config, "output_dir": str(folder / "output")}
    last = run.checkpoints.order_by("-step").first()
    if run.status == JobStatus.RUNNING and last is not None:
        checkpoint_store().pull(last.path)  # resumed on another machine than the one that wrote it
        config["resume_from"] = last.path
    run_status_set(run, JobStatus.RUNNING)
    recorder = RunRecorder(
        run, int(training.make_config(run.recipe, {**config, "model": run.base_model, **_dataset_placeholder(run)}).max_steps)
    )
    try:
        # checked again here, not only at launch: a symlink in the store may point elsewhere by now
        config.update(run_model_paths(project=run.project, recipe=run.recipe, base_model=run.base_model, config=config))
        if _uses_dataset(run.recipe):
            config["data"] = str(_write_dataset(run, folder / "dataset.jsonl"))
        result = training.run_recipe(
            run.recipe, config, on_metric=recorder.on_metric, on_checkpoint=recorder.on_checkpoint, should_stop=recorder.should_stop
        )
        recorder.flush()
    except Exception as exc:  # a worker must record every failure on the run, whatever raised it
        log.exception("training run %s failed", run.pk)
        recorder.flush()
        return run_status_set(run, JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])
    return run_status_set(run, JobStatus.FINISHED, progress=1.0 if not result.stopped else run.progress)


def _dataset_placeholder(run: TrainingRun) -> dict[str, str]:
    return {"data": "<frozen dataset>"} if _uses_dataset(run.recipe) else {}


def _write_dataset(run: TrainingRun, path: Path) -> Path:
    if run.dataset_spec.get("file"):  # frozen elsewhere as a file: the bytes must still hash to what was frozen
        data = Path(run.dataset_spec["file"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != run.dataset_hash:
            raise RuntimeError(
                f"the dataset file {run.dataset_spec['file']} changed since launch (sha256 != frozen {run.dataset_hash[:12]}…)"
            )
        path.write_bytes(data)
        return path
    with open(path, "w", encoding="utf-8") as handle:
        digest = dataset_export(run.episode_ids, handle)
    if digest != run.dataset_hash:
        raise RuntimeError(f"the dataset changed since launch: sha256 {digest[:12]}… != frozen {run.dataset_hash[:12]}…")
    return path


def run_status_set(run: TrainingRun, status: str, **fields: Any) -> TrainingRun:
    """Move the run to `status` (with its timestamps) and tell its stream. A cancel wins: a cancelled run keeps its
    status, and when it ends (finished or failed) it only gets its end time (and any error) recorded."""
    with transaction.atomic():
        rows = TrainingRun.objects.filter(pk=run.pk)
        if not rows.transition(status, **fields) and status != JobStatus.RUNNING:
            rows.stop_cancelled(**{k: v for k, v in fields.items() if k == "error"})
        run.refresh_from_db()
        live_publish(stream=run_stream(run), kind="status", payload={"status": run.status, "progress": run.progress, "error": run.error})
    return run


# --- evaluating a checkpoint -----------------------------------------------------------------------------------


def checkpoint_agent(
    *, checkpoint: Checkpoint, sampling: dict[str, Any] | None = None, harness: dict[str, Any] | None = None
) -> AgentConfig:
    """The project's `hf` AgentConfig that plays this checkpoint (one per checkpoint, created on first use)."""
    run = checkpoint.run
    agent, _ = AgentConfig.objects.get_or_create(
        project=run.project,
        name=f"run-{run.pk}-step-{checkpoint.step}",
        defaults={
            "kind": AgentKind.HF,
            "model": checkpoint.path,
            "checkpoint": checkpoint,
            "sampling": sampling or {"temperature": 0.0},
            "harness": harness or {},
        },
    )
    return agent
