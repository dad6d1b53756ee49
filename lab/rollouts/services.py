"""Rollouts: one episode of an agent config on a task and seed, persisted step by step and streamed live.

    job = rollout_launch(project=p, agent="my-agent", task="toolgym/lookup", seed=0)  # queued; a task runs it after commit
    rollout_run(job_id=job.pk)                          # the task's body; also callable inline (CLI)
    rollout_cancel(job=job)                             # the episode ends with termination_reason "cancelled"

Crash safety: each step is committed (and published) as the runner produces it. The Celery task acks late,
so a worker killed mid-episode leaves its message to be delivered again; the retry finds the running episode,
replays its stored steps into a fresh environment (the state-hash chain is verified) and continues. Appends
are idempotent by index, so nothing is lost or written twice.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, cast

from django.db import DatabaseError, transaction

from environments import registry
from environments.core import Env, EnvError
from environments.records import Header, Record, Step, header_score
from environments.runner import run_episode
from environments.screens import asked_for_screenshot, has_screen
from lab.errors import DomainError
from lab.jobs import TERMINAL, JobStatus, job_user
from lab.projects.models import Project
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.resume import FastForwardPolicy, GuardedPolicy
from lab.rollouts.teams import agent_config_dict, role_connection, team_kinds, team_validate
from lab.runs.storage import checkpoint_pull_if_ours
from lab.screenshots.services import step_screenshot_attach
from lab.trajectories.endpoints import agent_connection
from lab.trajectories.models import AgentConfig, AgentKind, Episode, EpisodeStatus, Task
from lab.trajectories.redaction import redactor_configured
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, episode_steps_as_dicts, task_resolve
from training.policies import harness_for
from training.policies.team import team_from_config

log = logging.getLogger(__name__)

_GPU_KINDS = (AgentKind.HF, AgentKind.VLLM)


# What a team's runner adds to the header by the end (the team and its per-role accounting), kept with the episode.
_TEAM_HEADER_KEYS = ("team", "roles", "harness_level")


class RolloutCancelled(Exception):
    """Raised from the sink between steps when someone asked the rollout to stop."""


def anchor_agent_resolve(*, project: Project, name: str) -> AgentConfig:
    """The project's AgentConfig for a scripted anchor, created on first use (anchors are agents too)."""
    agent, _ = AgentConfig.objects.get_or_create(project=project, name=name, defaults={"kind": AgentKind.SCRIPTED, "model": name})
    return agent


def rollout_launch(
    *,
    project: Project,
    agent: AgentConfig | str,
    task: Task | str,
    seed: int,
    evaluation: Evaluation | None = None,
    user: Any = None,
    enqueue: bool = True,
    options: dict[str, Any] | None = None,
) -> RolloutJob:
    """The one way a RolloutJob is made, from the API, the console and evaluations alike.

    `task` is a Task or a task id ("toolgym/lookup"); `agent` an AgentConfig or a name, where an anchor's name of
    the task's environment creates its scripted agent; `options` the environment's per-episode options (an attack
    setting), checked here. The job is queued and enqueued after commit.
    """
    if isinstance(task, str):
        try:
            spec = registry.get_task(task)
        except EnvError as exc:
            raise DomainError(exc.code, exc.message, path="task") from exc
        task = task_resolve(project=project, env=spec.env, key=spec.key)
    if isinstance(agent, str):
        agent = agent_resolve_for_run(project=project, name=agent, env_name=task.env)
    if agent.project_id != project.pk or task.project_id != project.pk:
        raise DomainError("cross_project", "the agent and the task must belong to the rollout's project", status=404)
    if agent.kind in (AgentKind.HUMAN, AgentKind.EXTERNAL):
        raise DomainError("not_runnable", f"agent {agent.name!r} is {agent.kind}; only scripted, hf, vllm and openai agents run here")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DomainError("invalid_seed", f"seed must be an integer, got {seed!r}")
    options = episode_options_check(task_id=task.task_id, options=options)
    agent_connection(agent=agent)  # a disabled agent or a refused endpoint fails here, before any job exists
    kinds = {agent.kind}
    if agent.team:  # and each role's: found in the project, not a team, its endpoint allowed
        team_validate(project=project, team=agent.team, agent_name=agent.name)
        kinds |= team_kinds(project=project, team=agent.team)
    job = RolloutJob.objects.create(
        project=project,
        agent=agent,
        task=task,
        seed=seed,
        evaluation=evaluation,
        options=options,
        queue="gpu" if kinds & set(_GPU_KINDS) else "cpu",
        created_by=job_user(user),
    )
    if enqueue:
        transaction.on_commit(lambda: rollout_enqueue(job))
    return job


def episode_options_check(*, task_id: str, options: Any) -> dict[str, Any]:
    """Episode options as the task's environment accepts them; a DomainError naming the field (path "options") if not."""
    if options is None:
        return {}
    try:
        return registry.options_check(task_id, options)
    except EnvError as exc:
        raise DomainError("invalid_options", exc.message, path="options") from exc


def rollout_enqueue(job: RolloutJob) -> None:
    from lab.rollouts.tasks import run_rollout

    run_rollout.apply_async(args=[job.pk], queue=job.queue)


def rollout_cancel(*, job: RolloutJob) -> RolloutJob:
    """A queued job is cancelled at once; a running one stops after its current step."""
    with transaction.atomic():
        job = RolloutJob.objects.select_for_update().get(pk=job.pk)
        if job.status in TERMINAL:
            return job
        if job.status == JobStatus.QUEUED:
            job.mark_cancelled(cancel_requested=True)
        else:  # running: the sink sees the flag between steps and the worker ends it cancelled
            job.cancel_requested = True
            job.save(update_fields=["cancel_requested"])
    if job.status == JobStatus.CANCELLED and job.evaluation_id:
        _evaluation_progress(job)
    return job


class EpisodeSink:
    """Runner sink: each step is appended (committed, then published live); cancellation is checked between steps."""

    def __init__(self, job: RolloutJob, episode: Episode, guard: GuardedPolicy, env: Env) -> None:
        self.job, self.episode, self.guard, self.env = job, episode, guard, env

    def on_start(self, header: Header) -> None:
        self.episode.meta = {**self.episode.meta, "header": {**header, "rollout_job": self.job.pk}}
        Episode.objects.filter(pk=self.episode.pk).update(meta=self.episode.meta)

    def on_step(self, step: Step) -> None:
        if asked_for_screenshot(step) and has_screen(self.env):  # the screen is as the policy saw it: nothing acted since
            step = step_screenshot_attach(project=self.job.project, step=step, env=self.env)
        episode_append_step(episode=self.episode, step=step)
        if RolloutJob.objects.filter(pk=self.job.pk, cancel_requested=True).exists():
            raise RolloutCancelled()

    def on_finish(self, record: Record) -> None:
        header = record["header"]
        reason = self.guard.stop_reason or header["termination_reason"]
        assert reason is not None, "run_episode names every episode's termination reason"
        cause = header.get("termination_cause")
        episode_finish(
            episode=self.episode,
            reason=reason,
            score=header_score(header),
            reward=header["reward"],
            cause=_cause_without_secrets(cause["type"], cause["message"]) if cause else None,
            header=cast(Header, {key: header.get(key) for key in _TEAM_HEADER_KEYS if key in header}),
        )


def _error_without_secrets(exc: BaseException) -> str:
    """A failed job's error as its pages and the API show it, keys and tokens masked as in _cause_without_secrets."""
    masked, _ = redactor_configured().redact_text(f"{type(exc).__name__}: {exc}"[:2000])
    return str(masked)


def _cause_without_secrets(kind: str, message: str) -> dict[str, str]:
    """An exception as {"type", "message"}, with API keys and tokens masked: an LLM client's error may quote the key."""
    masked, _ = redactor_configured().redact_text(str(message)[:500])
    return {"type": str(kind)[:100], "message": masked}


def rollout_run(*, job_id: int) -> RolloutJob:
    """Run (or resume) a job's episode to its end. Safe to call again for the same job after a crash."""
    job = RolloutJob.objects.select_related("agent", "task", "project", "episode").get(pk=job_id)
    if job.status in TERMINAL:
        return job
    if job.cancel_requested:
        return _close(job, JobStatus.CANCELLED)
    try:
        env = registry.make(job.task.task_id, job.seed, options=job.options or None)
        config = agent_config_dict(job.agent)
        if job.agent.kind in _GPU_KINDS:
            checkpoint_pull_if_ours(config["model"])  # a trained checkpoint, written on another machine
        harness = harness_for(config)
        # Checked again here: the settings or the agent (and its roles) may have changed since the launch.
        actor_connection = agent_connection(agent=job.agent)
        team = team_from_config(
            config, env, int(job.seed), connection_for=lambda role, cfg: actor_connection if role == "actor" else role_connection(role, cfg)
        )
    except DomainError as exc:
        return _close(job, JobStatus.FAILED, error=exc.message)
    except (EnvError, ValueError, ImportError, RuntimeError, OSError) as exc:
        return _close(job, JobStatus.FAILED, error=_error_without_secrets(exc))
    with transaction.atomic():
        job = RolloutJob.objects.select_for_update(of=("self",)).select_related("agent", "task", "project", "episode").get(pk=job_id)
        if job.status in TERMINAL:  # cancelled while its environment was being made
            return job
        opened = job.episode or episode_start(
            project=job.project, task=job.task, source="rollout", seed=int(job.seed), agent=job.agent, user=job.created_by
        )
        job.mark_running(attempts=job.attempts + 1, episode=opened)
    episode = job.episode
    assert episode is not None
    if episode.status != EpisodeStatus.RUNNING:  # finished before a crash hit the bookkeeping below
        return _close(job, _job_status(episode))
    history = episode_steps_as_dicts(episode)
    policy = team.actor
    if history and job.agent.kind == AgentKind.SCRIPTED:
        policy = FastForwardPolicy(policy, env, history)
    guard = GuardedPolicy(policy, pace_ms=harness.pace_ms)
    sink = EpisodeSink(job, episode, guard, env)
    # The team goes to the runner whole (a team's runner writes the header's "team" and "roles"); a plain
    # agent's Team has only the actor, which the runner runs as it always did.
    try:
        run_episode(
            env,
            dataclasses.replace(team, actor=guard),
            sink=sink,
            max_steps=harness.max_turns,
            start_history=history or None,
            harness=harness.to_dict(),
            max_consecutive_errors=harness.max_consecutive_errors,
        )
    except DatabaseError:
        raise  # the database went away or was locked: the Celery task retries, and the retry resumes by replay
    except RolloutCancelled:
        score = env.score()
        episode_finish(episode=episode, reason="cancelled", score=score.to_dict(), reward=score.composite)
        return _close(job, JobStatus.CANCELLED)
    except Exception as exc:  # a bug or a lost service: the episode ends as an infrastructure error, never silently
        log.exception("rollout %s failed", job.pk)
        episode.refresh_from_db()
        if episode.status == EpisodeStatus.RUNNING:
            episode_finish(episode=episode, reason="infrastructure_error", cause=_cause_without_secrets(type(exc).__name__, str(exc)))
        return _close(job, JobStatus.FAILED, error=_error_without_secrets(exc))
    episode.refresh_from_db()
    return _close(job, _job_status(episode))


def _job_status(episode: Episode) -> str:
    if episode.termination_reason == "cancelled":
        return JobStatus.CANCELLED
    return JobStatus.FAILED if episode.status == EpisodeStatus.FAILED else JobStatus.FINISHED


def _close(job: RolloutJob, status: str, *, error: str = "") -> RolloutJob:
    # Compare-and-set: a cancel that reached a queued job first stays (the worker's "failed" then changes nothing).
    RolloutJob.objects.filter(pk=job.pk).transition(status, error=error)
    job.refresh_from_db(fields=["status", "error", "ended_at"])
    if job.evaluation_id:
        _evaluation_progress(job)
    return job


def _evaluation_progress(job: RolloutJob) -> None:
    from lab.rollouts.evaluations import evaluation_refresh

    evaluation_refresh(evaluation_id=job.evaluation_id)  # type: ignore[arg-type]


def agent_resolve_for_run(*, project: Project, name: str, env_name: str) -> AgentConfig:
    """The project's agent called `name`; a scripted anchor of `env_name` is created on demand."""
    agent = AgentConfig.objects.filter(project=project, name=name).first()
    if agent is not None:
        return agent
    from environments.policies import policy_names

    if name in policy_names(env_name):
        return anchor_agent_resolve(project=project, name=name)
    raise DomainError("unknown_agent", f"no agent {name!r} in {project.slug}, and {env_name} has no anchor of that name", status=404)
