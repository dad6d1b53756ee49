"""Improvement loops: create one from an evaluation, run its stages as one resumable job, promote its checkpoint.

    loop = loop_create(project=p, evaluation=e, episode_ids=[...], config={...}, user=u)   # queued; enqueued after commit
    loop_run(loop_id=loop.pk, progress=callback)   # the Celery task's body and `manage.py improve run`; resumes
    loop_promote(loop=loop, user=u)                # the chosen checkpoint becomes an agent config (lab.runs.services.checkpoint_agent)
    loop_cancel(loop=loop)                         # queued: at once; running: its worker stops, and so do the jobs it started

Stages (lab.improve.stages): select -> diagnose -> dataset -> train -> checkpoint (dev seeds) -> report (test
seeds) -> promote. Progress and stage changes are live events on the stream "loop:<id>" (kind "stage": {stage,
status, progress, message}). A failed stage leaves the loop failed at that stage; running it again resumes there.
A cancelled loop is final: its worker stops at the next progress report or stage boundary.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from environments import registry
from lab.edge import fields_check
from lab.errors import Conflict, DomainError
from lab.improve.config import loop_config_check
from lab.improve.guard import loop_plan_check
from lab.improve.models import AUTOMATIC_STAGES, ImprovementLoop, Stage
from lab.improve.stages import STAGE_FUNCTIONS, LoopCancelled
from lab.jobs import TERMINAL, JobStatus, job_user
from lab.live.services import live_publish
from lab.projects.models import Project
from lab.rollouts.evaluations import evaluation_cancel
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episodes
from lab.runs.models import TrainingRun
from lab.runs.services import checkpoint_agent, run_cancel, run_config_validate, run_model_paths
from lab.trajectories.models import AgentConfig, Episode

log = logging.getLogger(__name__)


def loop_stream(loop: ImprovementLoop | int) -> str:
    return f"loop:{loop if isinstance(loop, int) else loop.pk}"


def failing_episodes(evaluation: Evaluation) -> list[Episode]:
    """The evaluation's scored episodes that did not pass, by task and seed."""
    return [e for e in evaluation_episodes(evaluation) if not e.passed]


def loop_create(
    *,
    project: Project,
    evaluation: Evaluation,
    config: Any,
    episode_ids: Any = None,
    name: str = "",
    user: Any = None,
    enqueue: bool = True,
) -> ImprovementLoop:
    """Validate the plan (config, picked episodes, the leakage guard), store the loop queued and enqueue it after commit.
    `episode_ids` None picks every failing episode of the evaluation (up to config max_episodes)."""
    if evaluation.project_id != project.pk:
        raise DomainError("not_found", f"no evaluation {evaluation.pk} in project {project.slug}", status=404, path="evaluation")
    if evaluation.status != JobStatus.FINISHED:
        raise Conflict(
            "evaluation_not_finished", f"evaluation {evaluation.pk} is {evaluation.status}; improve from a finished one", path="evaluation"
        )
    fields_check(ImprovementLoop, name=name)
    config = loop_config_check(config, agent=evaluation.agent, evaluation=evaluation)
    # What the train stage will hand the recipe, refused now rather than after diagnosis and the dataset.
    run_config_validate(recipe=config["recipe"], base_model=config["base_model"], config=config["recipe_config"])
    run_model_paths(project=project, recipe=config["recipe"], base_model=config["base_model"], config=config["recipe_config"])
    if config["diagnoser"]["kind"] != "rule":
        diagnoser = AgentConfig.objects.filter(project=project, name=config["diagnoser"]["name"]).first()
        if diagnoser is None:
            raise DomainError(
                "not_found", f"no agent {config['diagnoser']['name']!r} in project {project.slug}", status=404, path="diagnoser.name"
            )
        if (diagnoser.kind == "scripted") != (config["diagnoser"]["kind"] == "anchor"):
            want = "a scripted agent" if config["diagnoser"]["kind"] == "anchor" else "a model agent (hf, vllm, openai)"
            raise DomainError(
                "invalid_loop", f"diagnoser.name: {diagnoser.name!r} is a {diagnoser.kind} agent; give {want}", path="diagnoser.name"
            )
    failing = {e.pk: e for e in failing_episodes(evaluation)}
    if episode_ids is None:
        episode_ids = sorted(failing)[: config["max_episodes"]]
    if not isinstance(episode_ids, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in episode_ids):
        raise DomainError("invalid_episodes", f"episodes must be a list of episode ids, got {episode_ids!r}"[:300], path="episodes")
    if not episode_ids:
        raise DomainError("invalid_episodes", f"evaluation {evaluation.pk} has no failing episodes to improve on", path="episodes")
    if len(episode_ids) > config["max_episodes"]:
        raise DomainError(
            "invalid_episodes", f"{len(episode_ids)} episodes picked; at most max_episodes={config['max_episodes']}", path="episodes"
        )
    strangers = sorted(set(episode_ids) - set(failing))
    if strangers:
        raise DomainError(
            "invalid_episodes", f"episode {strangers[0]} is not a failing episode of evaluation {evaluation.pk}", path="episodes"
        )
    env = registry.task_set(evaluation.task_set)[0].env
    successes = [e for e in evaluation_episodes(evaluation) if e.passed]
    loop_plan_check(
        config=config,
        episode_keys=[(env, failing[i].task.key, int(failing[i].seed or 0)) for i in episode_ids],
        success_keys=[(env, e.task.key, int(e.seed or 0)) for e in successes],
    )
    with transaction.atomic():
        loop = ImprovementLoop.objects.create(
            project=project,
            evaluation=evaluation,
            agent=evaluation.agent,
            config=config,
            episode_ids=sorted(set(episode_ids)),
            name=name or f"improve {evaluation.agent.name} ({config['recipe']})",
            created_by=job_user(user),
        )
        _publish(loop, "queued")
        if enqueue:
            transaction.on_commit(lambda: loop_enqueue(loop))
    return loop


def loop_enqueue(loop: ImprovementLoop) -> None:
    from lab.improve.tasks import run_loop

    run_loop.apply_async(args=[loop.pk], queue="gpu")  # it trains and runs local models


def _publish(loop: ImprovementLoop, message: str) -> None:
    live_publish(
        stream=loop_stream(loop),
        kind="stage",
        payload={"stage": loop.stage, "status": loop.status, "progress": loop.progress, "message": message},
    )


def _stage_mark(loop: ImprovementLoop, stage: str, **values: Any) -> None:
    loop.stages = {**loop.stages, stage: {**loop.stages.get(stage, {}), **values}}


def _cancelled(loop: ImprovementLoop) -> bool:
    return ImprovementLoop.objects.filter(pk=loop.pk, status=JobStatus.CANCELLED).exists()


def _stop(loop: ImprovementLoop, stage: str) -> ImprovementLoop:
    """The worker saw the cancel: the stage it was in reads cancelled, and the loop gets its end time."""
    loop.refresh_from_db(fields=["stages"])
    _stage_mark(loop, stage, status="cancelled", ended_at=timezone.now().isoformat())
    ImprovementLoop.objects.filter(pk=loop.pk).stop_cancelled(stages=loop.stages)
    loop.refresh_from_db()
    _publish(loop, f"cancelled during {stage}")
    return loop


def loop_run(*, loop_id: int, progress: Any = None) -> ImprovementLoop:
    """Run the loop from its current stage through the report. A loop found running (its worker died) or failed
    resumes at its stage; each stage skips what it finished before. Promotion is left to a researcher. A cancel
    (loop_cancel) stops it at the next progress report or stage boundary."""
    loop = ImprovementLoop.objects.select_related("project", "agent", "evaluation").get(pk=loop_id)
    if loop.stage in (Stage.PROMOTE, Stage.DONE) or loop.status == JobStatus.CANCELLED:
        return loop
    # Compare-and-set: a cancel that arrived since the read above wins.
    if not ImprovementLoop.objects.filter(pk=loop.pk).transition(JobStatus.RUNNING, error=""):
        loop.refresh_from_db()
        return loop
    loop.refresh_from_db(fields=["status", "error", "started_at", "ended_at"])
    for stage in AUTOMATIC_STAGES[AUTOMATIC_STAGES.index(Stage(loop.stage)) :]:
        if _cancelled(loop):
            return _stop(loop, stage)
        loop.stage, loop.progress = stage, 0.0
        _stage_mark(loop, stage, status="running", started_at=loop.stages.get(stage, {}).get("started_at") or timezone.now().isoformat())
        loop.save(update_fields=["stage", "progress", "stages"])
        _publish(loop, f"{stage} started")

        def report(fraction: float, message: str, stage: str = stage) -> None:
            if _cancelled(loop):
                raise LoopCancelled()
            loop.progress = max(0.0, min(1.0, fraction))
            ImprovementLoop.objects.filter(pk=loop.pk).update(progress=loop.progress)
            _publish(loop, message)
            if progress is not None:
                progress(stage, loop.progress, message)

        try:
            detail = STAGE_FUNCTIONS[stage](loop, report)
        except DatabaseError:
            raise  # the task retries; the stage resumes
        except LoopCancelled:
            return _stop(loop, stage)
        except Exception as exc:  # any failure is recorded on the loop at its stage, never left running
            if _cancelled(loop):  # a child job the cancel stopped (a training run, an evaluation) ends its stage so
                return _stop(loop, stage)
            if not isinstance(exc, DomainError):
                log.exception("loop %s failed at %s", loop.pk, stage)
            message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
            loop.refresh_from_db(fields=["stages"])
            _stage_mark(loop, stage, status="failed", error=message[:2000])
            if not ImprovementLoop.objects.filter(pk=loop.pk).transition(JobStatus.FAILED, error=message[:4000], stages=loop.stages):
                return _stop(loop, stage)  # cancelled meanwhile
            loop.refresh_from_db()
            _publish(loop, f"{stage} failed: {message[:300]}")
            return loop
        loop.refresh_from_db(fields=["stages"])
        _stage_mark(loop, stage, status="finished", ended_at=timezone.now().isoformat(), **detail)
        loop.progress = 1.0
        loop.save(update_fields=["stages", "progress"])
    if not ImprovementLoop.objects.filter(pk=loop.pk).transition(JobStatus.FINISHED, stage=Stage.PROMOTE):
        return _stop(loop, Stage.REPORT)  # cancelled as the report finished: the report stays, promotion is not offered
    loop.refresh_from_db()
    _publish(loop, "report ready: promote the checkpoint if it is better")
    return loop


def loop_cancel(*, loop: ImprovementLoop) -> ImprovementLoop:
    """A queued loop is cancelled at once. A running loop is cancelled now and its worker stops at its next progress
    report or stage boundary; the child jobs it started and has not finished are cancelled too (the rollouts of its
    evaluations stop after their current step, its training run before its next step), while a diagnosis job, which
    cannot be cancelled, is waited for. Cancelling a cancelled loop changes nothing; a finished or failed loop is
    refused with the life cycle's 409 illegal_transition."""
    with transaction.atomic():
        loop = ImprovementLoop.objects.select_for_update(of=("self",)).get(pk=loop.pk)
        if loop.status == JobStatus.CANCELLED:
            return loop
        running = loop.status == JobStatus.RUNNING
        loop.mark_cancelled(stopping=running)  # Conflict "illegal_transition" for a finished or failed loop
        if not running:
            _stage_mark(loop, loop.stage, status="cancelled", ended_at=timezone.now().isoformat())
            loop.save(update_fields=["stages"])
        _publish(loop, "cancelled" if not running else "cancel requested: the loop stops at its next step")
    evaluations = [
        loop.baseline_evaluation_id,
        loop.test_evaluation_id,
        loop.stages.get("dataset", {}).get("anchor_evaluation"),
        *loop.dev_evaluations.values(),
    ]
    for evaluation in Evaluation.objects.filter(pk__in=[int(pk) for pk in evaluations if pk]).exclude(status__in=TERMINAL):
        evaluation_cancel(evaluation=evaluation)
    run = TrainingRun.objects.filter(pk=loop.run_id).exclude(status__in=TERMINAL).first() if loop.run_id else None
    if run is not None:
        run_cancel(run=run)
    return loop


def loop_resume(*, loop: ImprovementLoop) -> ImprovementLoop:
    """Enqueue a failed loop again at the stage it failed in."""
    if loop.status != JobStatus.FAILED:
        raise Conflict("not_failed", f"loop {loop.pk} is {loop.status}; only a failed loop is resumed", path="loop")
    loop.mark_queued()
    loop.refresh_from_db()
    transaction.on_commit(lambda: loop_enqueue(loop))
    return loop


def loop_promote(*, loop: ImprovementLoop, user: Any = None) -> AgentConfig:
    """The chosen checkpoint as the project's agent config (with the starting agent's sampling and harness)."""
    with transaction.atomic():
        loop = ImprovementLoop.objects.select_for_update(of=("self",)).select_related("checkpoint__run__project", "agent").get(pk=loop.pk)
        if loop.stage == Stage.DONE and loop.promoted_agent is not None:
            return loop.promoted_agent
        if loop.stage != Stage.PROMOTE or loop.checkpoint is None:
            raise Conflict("not_reported", f"loop {loop.pk} is at stage {loop.stage}; promote after its report", path="loop")
        agent = checkpoint_agent(checkpoint=loop.checkpoint, sampling=loop.agent.sampling or None, harness=loop.agent.harness or None)
        loop.promoted_agent, loop.stage = agent, Stage.DONE
        _stage_mark(
            loop,
            "promote",
            status="finished",
            ended_at=timezone.now().isoformat(),
            agent=agent.name,
            by=getattr(user, "username", "") or "",
        )
        loop.save(update_fields=["promoted_agent", "stage", "stages"])
        _publish(loop, f"promoted as agent {agent.name}")
    return agent
