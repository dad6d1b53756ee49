"""Reads for evaluations and rollouts: one scoped to the caller's projects, the episode rows an evaluation's
statistics are computed from, and the anchors' rows beside them."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from environments.attacks import metric_row
from lab.jobs import JobStatus
from lab.projects.models import Project
from lab.projects.selectors import visible_get
from lab.rollouts.models import Comparison, Evaluation, RolloutJob
from lab.trajectories.models import AgentConfig, AgentKind, Episode, EpisodeStatus, Provenance
from lab.trajectories.shared import episode_header

ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


def evaluation_list(*, projects: QuerySet) -> QuerySet[Evaluation]:
    """The evaluations of `projects`, newest first (Evaluation.Meta.ordering)."""
    return Evaluation.objects.filter(project__in=projects).select_related("agent", "project", "checkpoint")


def evaluation_list_active(*, projects: QuerySet) -> QuerySet[Evaluation]:
    """Those still queued or running."""
    return evaluation_list(projects=projects).filter(status__in=ACTIVE)


def evaluation_episode_list(*, evaluation: Evaluation, live: bool) -> QuerySet[Episode]:
    """Its episodes by task and seed: while it runs, every episode its rollouts have started so far; once ended, the
    set it recorded."""
    episodes = Episode.objects.filter(rollout__evaluation=evaluation) if live else evaluation.episodes.all()
    return episodes.select_related("task").order_by("task__key", "seed")


def evaluation_failed_jobs(*, evaluation: Evaluation) -> QuerySet[RolloutJob]:
    """The evaluation's failed rollouts (task, seed and error), by task and seed: what its page says went wrong."""
    return evaluation.rollouts.filter(status=JobStatus.FAILED).select_related("task").order_by("task__key", "seed")


def evaluation_find(*, project: Project, pk: int) -> Evaluation | None:
    """The project's evaluation `pk`, or None (for manage.py, whose refusal names the option)."""
    return Evaluation.objects.filter(project=project, pk=pk).first()


def comparison_list(*, projects: QuerySet) -> QuerySet[Comparison]:
    return Comparison.objects.filter(project__in=projects).select_related("project")


def rollout_job_list(*, projects: QuerySet) -> QuerySet[RolloutJob]:
    return RolloutJob.objects.filter(project__in=projects).select_related("agent", "task", "project")


def rollout_job_ids(*, evaluation: Evaluation) -> list[int]:
    """The ids of the evaluation's rollouts, by task and seed (the order a command runs them in)."""
    return list(RolloutJob.objects.filter(evaluation=evaluation).order_by("task__key", "seed").values_list("pk", flat=True))


def rollout_job_find(*, projects: QuerySet, pk: int) -> RolloutJob | None:
    """The rollout `pk` of `projects`, or None (a page that only mentions it, unlike rollout_job_get's 404)."""
    return rollout_job_list(projects=projects).filter(pk=pk).first()


def rollout_job_for_episode(*, episode: Episode) -> RolloutJob | None:
    """The rollout that writes `episode`, if a rollout does (only its pk and status are loaded)."""
    return RolloutJob.objects.filter(episode=episode).only("pk", "status").first()


def evaluation_get(*, projects: QuerySet, pk: int) -> Evaluation:
    evaluations = Evaluation.objects.filter(project__in=projects).select_related("agent", "checkpoint")
    return visible_get(evaluations, pk=pk, what="evaluation")


def comparison_get(*, projects: QuerySet, pk: int) -> Comparison:
    return visible_get(Comparison.objects.filter(project__in=projects).select_related("project"), pk=pk, what="comparison")


def rollout_job_get(*, projects: QuerySet, pk: int) -> RolloutJob:
    return visible_get(RolloutJob.objects.filter(project__in=projects).select_related("project"), pk=pk, what="rollout")


def episode_row(episode: Episode) -> dict[str, Any]:
    """An episode as the statistics read it, with its attack-axis fields (environments.attacks.metric_row) and its
    per-role accounting (lab.rollouts.aggregate.role_stats)."""
    composite = episode.composite or 0.0
    return {
        **metric_row(composite=composite, score=episode.score),
        "task": episode.task.key,
        "seed": episode.seed,
        "composite": composite,
        "passed": bool(episode.passed),
        "termination_reason": episode.termination_reason,
        "episode": episode.pk,
        "roles": episode_header(episode).get("roles") or {},
    }


def agent_team(agent: AgentConfig) -> dict[str, Any]:
    """An agent config's team (environments.roles), {} for a plain agent."""
    return dict(agent.team) if isinstance(agent.team, dict) else {}


def evaluation_team(evaluation: Evaluation) -> dict[str, Any]:
    """What the team was: the header of one of its episodes (as the runner described it), else the agent's config."""
    episode = Episode.objects.filter(rollout__evaluation=evaluation).filter(meta__header__has_key="team").order_by("pk").first()
    team = episode_header(episode).get("team") if episode is not None else None
    return team if isinstance(team, dict) and team else agent_team(evaluation.agent)


def evaluation_episodes(evaluation: Evaluation) -> list[Episode]:
    """Scored episodes of the evaluation's finished jobs. Failed jobs (infrastructure errors) are not agent results.
    A job's episode is the server's own recording; the tier is checked all the same, as every aggregate does."""
    jobs = RolloutJob.objects.filter(
        evaluation=evaluation, status=JobStatus.FINISHED, episode__status=EpisodeStatus.FINISHED, episode__provenance=Provenance.RECORDED
    )
    return [job.episode for job in jobs.select_related("episode__task").order_by("task__key", "seed") if job.episode is not None]


def evaluation_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    return [episode_row(e) for e in evaluation_episodes(evaluation)]


def anchor_rows(evaluation: Evaluation) -> dict[str, list[dict[str, Any]]]:
    """For each scripted anchor of the project, its latest finished rollout on each (task, seed) of the evaluation:
    recorded ones only, so no upload can stand beside an agent as the anchor's score."""
    tasks = {job.task_id for job in RolloutJob.objects.filter(evaluation=evaluation).only("task_id")}
    episodes = (
        Episode.objects.filter(
            project=evaluation.project,
            source="rollout",
            provenance=Provenance.RECORDED,
            status=EpisodeStatus.FINISHED,
            task_id__in=tasks,
            seed__in=evaluation.seeds,
            agent__kind=AgentKind.SCRIPTED,
        )
        .exclude(agent=evaluation.agent)
        .exclude(termination_reason="cancelled")
        .select_related("agent", "task")
        .order_by("agent__name", "task__key", "seed", "-id")
    )
    latest: dict[tuple[str, str, int | None], Episode] = {}
    for episode in episodes:
        assert episode.agent is not None
        if metric_row(composite=0.0, score=episode.score)["attacked"]:
            continue  # an anchor's score beside an agent's is its unattacked one
        latest.setdefault((episode.agent.name, episode.task.key, episode.seed), episode)
    rows: dict[str, list[dict[str, Any]]] = {}
    for (name, _, _), episode in latest.items():
        rows.setdefault(name, []).append(episode_row(episode))
    return rows
