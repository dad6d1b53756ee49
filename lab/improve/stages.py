"""The loop's stages, each a function of the loop that skips what it finished before (so a re-run resumes).

Every stage records what it made on the loop (the lineage) before it starts the long work, so a worker lost
mid-stage leaves the loop pointing at the half-done job, and the next run finishes that job instead of starting
another: rollout jobs resume (lab.rollouts.services.rollout_run), a diagnosis job skips episodes it answered, a
training run resumes from its last checkpoint (lab.runs.services.run_execute).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from environments import registry
from lab.diagnoses.jobs import diagnosis_job_launch, diagnosis_job_run
from lab.errors import DomainError
from lab.improve.config import ON_POLICY
from lab.improve.datasets import loop_dataset_build
from lab.improve.models import ImprovementLoop
from lab.improve.report import loop_report
from lab.jobs import TERMINAL, JobStatus
from lab.rollouts.evaluations import checkpoint_evaluate, evaluation_launch, evaluation_refresh
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import rollout_run
from lab.runs.models import Checkpoint
from lab.runs.services import FrozenFile, run_create, run_execute
from lab.trajectories.models import AgentConfig

Progress = Callable[[float, str], None]  # (fraction of the stage, what is happening)


class LoopCancelled(Exception):
    """Raised by the loop's progress callback once the loop is cancelled: the worker stops where it reported."""


def _quiet(progress: Progress) -> Progress:
    """Progress for a child job that records any exception as its own failure (a diagnosis job): a cancel is left
    for the stage boundary rather than turned into the child's error."""

    def report(fraction: float, message: str) -> None:
        with contextlib.suppress(LoopCancelled):
            progress(fraction, message)

    return report


def evaluation_run_inline(evaluation: Evaluation, progress: Progress, label: str) -> Evaluation:
    """Run the evaluation's unfinished rollout jobs in this process (the loop's worker), then its aggregate."""
    jobs = list(RolloutJob.objects.filter(evaluation=evaluation).order_by("pk").values_list("pk", "status"))
    for index, (job_id, status) in enumerate(jobs):
        if status not in TERMINAL:
            rollout_run(job_id=job_id)
        progress((index + 1) / max(1, len(jobs)), f"{label}: episode {index + 1} of {len(jobs)}")
    return evaluation_refresh(evaluation_id=evaluation.pk)


def _remember(loop: ImprovementLoop, stage: str, **values: Any) -> None:
    loop.stages = {**loop.stages, stage: {**loop.stages.get(stage, {}), **values}}
    loop.save(update_fields=["stages"])


def stage_select(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    progress(1.0, f"{len(loop.episode_ids)} failing episodes picked")
    return {"episodes": len(loop.episode_ids)}


def stage_diagnose(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    job = loop.diagnosis_job
    if job is None:
        kind, name = loop.config["diagnoser"]["kind"], loop.config["diagnoser"]["name"]
        agent = AgentConfig.objects.get(project=loop.project, name=name) if kind != "rule" else None
        job = diagnosis_job_launch(
            project=loop.project,
            episode_ids=loop.episode_ids,
            agent=agent,
            rule_anchor=name if kind == "rule" else "",
            verify=True,
            enqueue=False,
        )
        loop.diagnosis_job = job
        loop.save(update_fields=["diagnosis_job"])
    if job.status != JobStatus.FINISHED:
        # A diagnosis job cannot be cancelled: a cancelled loop waits for it and stops at the stage boundary.
        quiet = _quiet(progress)
        job = diagnosis_job_run(job_id=job.pk, progress=lambda done, total: quiet(done / max(1, total), f"diagnosed {done} of {total}"))
    if job.status != JobStatus.FINISHED:
        raise DomainError("stage_failed", f"diagnosis job {job.pk} {job.status}: {job.error}")
    overall = (job.summary.get("by_category") or {}).get("all") or {}
    return {"diagnosis_job": job.pk, "diagnoses": overall.get("diagnoses", 0), "verified": overall.get("verified", 0)}


def stage_dataset(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    config = loop.config
    if config["recipe"] in ON_POLICY:
        task, start = config["recipe_config"]["task"], config["recipe_config"].get("train_seed_start", 0)
        progress(1.0, "no dataset: the recipe plays its training task itself")
        return {"skipped": f"{config['recipe']} plays {task} from seed {start} itself; no dataset is read"}
    anchor_evaluation = None
    if config["sources"]["anchors"]:
        evaluation_id = loop.stages.get("dataset", {}).get("anchor_evaluation")
        anchor_evaluation = Evaluation.objects.filter(pk=evaluation_id, project=loop.project).first() if evaluation_id else None
        if anchor_evaluation is None:
            env = registry.task_set(loop.evaluation.task_set)[0].env
            anchor_evaluation = evaluation_launch(
                project=loop.project, agent=config["anchor"], task_set=f"{env}/train", seeds=config["anchor_seeds"], enqueue=False
            )
            _remember(loop, "dataset", anchor_evaluation=anchor_evaluation.pk)
        evaluation_run_inline(anchor_evaluation, progress, "anchor demonstrations")
    dataset = loop_dataset_build(loop=loop, anchor_evaluation=anchor_evaluation)
    progress(1.0, f"dataset v{dataset.version}: {dataset.lines} lines")
    return {
        "dataset": dataset.pk,
        "version": dataset.version,
        "lines": dataset.lines,
        "counts": dataset.counts,
        "anchor_evaluation": anchor_evaluation.pk if anchor_evaluation else None,
    }


def stage_train(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    run = loop.run
    if run is None:
        config = loop.config
        frozen = None
        if loop.dataset is not None:
            frozen = FrozenFile(path=loop.dataset.path, sha256=loop.dataset.content_hash, episode_ids=tuple(loop.dataset.episode_ids))
        run = run_create(
            project=loop.project,
            recipe=config["recipe"],
            base_model=config["base_model"],
            config=config["recipe_config"],
            name=f"loop {loop.pk}: {config['recipe']}",
            user=loop.created_by,
            enqueue=False,
            dataset_file=frozen,
        )
        loop.run = run
        loop.save(update_fields=["run"])
    progress(0.0, f"training run {run.pk}")
    run = loop.run = run_execute(run_id=run.pk)
    if run.status != JobStatus.FINISHED:
        raise DomainError("stage_failed", f"training run {run.pk} {run.status}: {run.error or 'stopped'}")
    if not run.checkpoints.exists():
        raise DomainError("stage_failed", f"training run {run.pk} saved no checkpoint")
    return {"run": run.pk, "checkpoints": run.checkpoints.count()}


def _evaluate_checkpoint(loop: ImprovementLoop, checkpoint: Checkpoint, seeds: list[int], task_set: str, known: int | None) -> Evaluation:
    evaluation = Evaluation.objects.filter(pk=known, project=loop.project).first() if known else None
    return evaluation or checkpoint_evaluate(
        checkpoint=checkpoint,
        task_set=task_set,
        seeds=seeds,
        sampling=loop.agent.sampling or None,
        harness=loop.agent.harness or None,
        enqueue=False,
    )


def _share(progress: Progress, index: int, count: int) -> Progress:
    """Progress of the index-th of `count` equal parts of a stage."""

    def report(fraction: float, message: str) -> None:
        progress((index + fraction) / count, message)

    return report


def stage_checkpoint(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    """Each checkpoint on the dev seeds; the best mean composite wins (a tie goes to the later step)."""
    assert loop.run is not None, "the train stage sets the run"
    checkpoints = list(loop.run.checkpoints.order_by("step"))
    table = []
    for index, checkpoint in enumerate(checkpoints):
        evaluation = _evaluate_checkpoint(
            loop, checkpoint, loop.config["dev_seeds"], loop.config["dev_task_set"], loop.dev_evaluations.get(str(checkpoint.pk))
        )
        loop.dev_evaluations = {**loop.dev_evaluations, str(checkpoint.pk): evaluation.pk}
        loop.save(update_fields=["dev_evaluations"])
        label = f"checkpoint {index + 1} of {len(checkpoints)} (step {checkpoint.step}) on dev seeds"
        evaluation = evaluation_run_inline(evaluation, _share(progress, index, len(checkpoints)), label)
        mean = ((evaluation.aggregate or {}).get("composite") or {}).get("mean")
        table.append({"checkpoint": checkpoint.pk, "step": checkpoint.step, "evaluation": evaluation.pk, "composite": mean})
    best = max(table, key=lambda row: (row["composite"] if row["composite"] is not None else -1.0, row["step"]))
    loop.checkpoint_id = best["checkpoint"]
    loop.save(update_fields=["checkpoint"])
    return {"candidates": table, "chosen": best}


def stage_report(loop: ImprovementLoop, progress: Progress) -> dict[str, Any]:
    assert loop.checkpoint is not None, "the checkpoint stage chooses one"
    config = loop.config
    if loop.baseline_evaluation is None:
        loop.baseline_evaluation = evaluation_launch(
            project=loop.project, agent=loop.agent, task_set=config["test_task_set"], seeds=config["test_seeds"], enqueue=False
        )
        loop.save(update_fields=["baseline_evaluation"])
    if loop.test_evaluation is None:
        loop.test_evaluation = _evaluate_checkpoint(loop, loop.checkpoint, config["test_seeds"], config["test_task_set"], None)
        loop.save(update_fields=["test_evaluation"])
    baseline = evaluation_run_inline(loop.baseline_evaluation, lambda f, m: progress(f / 2, m), "starting agent on test seeds")
    candidate = evaluation_run_inline(loop.test_evaluation, lambda f, m: progress(0.5 + f / 2, m), "chosen checkpoint on test seeds")
    overlap = sorted(set(config["dev_seeds"]) & set(candidate.seeds))
    assert not overlap, f"loop {loop.pk}: test seeds {overlap} were dev seeds; loop_config_check keeps them apart"
    loop.report = {
        **loop_report(candidate=candidate, baseline=baseline),
        "dev_seeds": list(config["dev_seeds"]),
        "test_seeds": list(candidate.seeds),
        "dev_test_seed_overlap": len(overlap),
    }
    loop.save(update_fields=["report"])
    overall = loop.report["overall"].get("composite") or {}
    return {"pairs": loop.report["pairs"], "composite_diff": overall.get("mean"), "ci95": overall.get("ci95")}


STAGE_FUNCTIONS: dict[str, Callable[[ImprovementLoop, Progress], dict[str, Any]]] = {
    "select": stage_select,
    "diagnose": stage_diagnose,
    "dataset": stage_dataset,
    "train": stage_train,
    "checkpoint": stage_checkpoint,
    "report": stage_report,
}
