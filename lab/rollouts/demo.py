"""The first-run demo: one click runs an environment's anchors on its demo task, so a newcomer's empty console
fills with episodes they can watch live within a minute.

    demo = demo_choice()                     # Demo(task="storebench/payment-outage", anchors=(...), seeds=(61, 62)) or None
    evaluations = demo_launch(project=p, user=u)   # one evaluation per anchor; a second click gets the same ones

The environment and task come from metadata (EnvMeta.demo_task), never from a name written here: playable
environments first, then by name. Each anchor is its own evaluation, so each gets its figures and the last
one's table has the others beside it (lab.rollouts.evaluations.evaluation_aggregate).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from environments import registry
from environments.core import EnvError
from lab.errors import DomainError
from lab.jobs import JobStatus
from lab.projects.models import Project
from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.local_models import local_agent_names, local_agents_ensure
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import anchor_agent_resolve
from lab.trajectories.models import AgentConfig

DEMO_SEEDS = 2  # the task's first public seeds: enough to see seeds differ, few enough to finish in seconds
ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)


@dataclasses.dataclass(frozen=True)
class Demo:
    task: str  # a task id, also the evaluations' task set
    anchors: tuple[str, ...]  # the default anchor last, so its evaluation ends with the others beside it
    seeds: tuple[int, ...]
    model_tasks: tuple[str, ...] = ()  # tasks the packaged local model plays live (EnvMeta.model_demo_task), one seed each


def demo_choice() -> Demo | None:
    """The first environment whose metadata names a demo task it has (highest demo_priority, then playable ones, then
    by name, so a new environment cannot take the demo over by sorting first); None when none does."""
    for meta in sorted(registry.list_envs(), key=lambda m: (-m.demo_priority, not m.playable, m.env)):
        if not meta.demo_task or not meta.anchors:
            continue
        try:
            task = registry.get_task(f"{meta.env}/{meta.demo_task}")
        except EnvError:  # the contract check reports it; the console just offers no demo
            continue
        anchors = sorted(meta.anchors, key=lambda name: (name == meta.default_anchor, name))
        return Demo(task=task.id, anchors=tuple(anchors), seeds=tuple(task.public_seeds[:DEMO_SEEDS]), model_tasks=_model_tasks())
    return None


def _model_tasks() -> tuple[str, ...]:
    """The tasks environments name for a small model's live demo episode, by environment name."""
    tasks = []
    for meta in sorted(registry.list_envs(), key=lambda m: m.env):
        if meta.model_demo_task:
            try:
                tasks.append(registry.get_task(f"{meta.env}/{meta.model_demo_task}").id)
            except EnvError:
                continue
    return tuple(tasks)


def demo_offer(*, projects: Iterable[Project]) -> dict[str, Any]:
    """What the demo button's template needs (templates/console/_demo_offer.html): nothing when there is no demo
    or the user may launch in none of the `projects`."""
    demo = demo_choice()
    launchable = list(projects)
    if demo is None or not launchable:
        return {}
    return {"demo": demo, "demo_projects": launchable, "demo_episodes": len(demo.anchors) * len(demo.seeds)}


def demo_running(*, project: Project, demo: Demo) -> list[Evaluation]:
    """The project's unfinished evaluations of the demo: its anchors on its task, the local model on its tasks."""
    anchors = Evaluation.objects.filter(project=project, task_set=demo.task, agent__name__in=demo.anchors, status__in=ACTIVE)
    model = Evaluation.objects.filter(
        project=project, task_set__in=demo.model_tasks, agent__name__in=local_agent_names(), status__in=ACTIVE
    )
    return list((anchors | model).select_related("agent").order_by("id"))


def demo_launch(*, project: Project, user: Any = None) -> list[Evaluation]:
    """Launch one evaluation per anchor of the demo, or return the ones still running: one demo at a time per
    project, so a double click (or two tabs) starts it once. The caller checks the user may launch evaluations."""
    demo = demo_choice()
    if demo is None:
        raise DomainError("no_demo", "no environment here names a demo task (EnvMeta.demo_task)", status=404)
    with transaction.atomic():
        # The project row's lock serializes concurrent clicks on PostgreSQL; SQLite's IMMEDIATE transactions already do.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        running = demo_running(project=project, demo=demo)
        if running:
            return running
        agents = [anchor_agent_resolve(project=project, name=name) for name in demo.anchors]
        launched = [
            evaluation_launch(project=project, agent=agent, task_set=demo.task, seeds=list(demo.seeds), user=user) for agent in agents
        ]
        # The packaged model, when installed, plays beside the anchors: one episode per model task, streamed live.
        local_agents_ensure(projects=[project])
        for agent in AgentConfig.objects.filter(project=project, name__in=local_agent_names()):
            for task in demo.model_tasks:
                seed = registry.get_task(task).public_seeds[0]
                launched.append(evaluation_launch(project=project, agent=agent, task_set=task, seeds=[seed], user=user))
        return launched


RECENT_S = 600  # a finished demo's summary stays on the dashboard this long


def demo_progress(*, projects: Iterable[Project], now: Any = None) -> dict[str, Any]:
    """Where the latest demo of the `projects` stands, for the dashboard's progress card: {} when none ran in the
    last RECENT_S seconds. Stages: "queued" (launched, no episode started), "running" (the anchors' episodes; the
    ones under way named with their step), "scoring" (every episode ended, an evaluation still summing up), "done".
    Three queries: the evaluations, their rollouts with their episodes, nothing per episode."""
    from django.utils import timezone

    demo = demo_choice()
    if demo is None:
        return {}
    now = now or timezone.now()
    latest = Evaluation.objects.filter(project__in=list(projects), task_set=demo.task, agent__name__in=demo.anchors).order_by("-id").first()
    if latest is None:
        return {}
    # The batch: the latest launch's evaluations of the same project, one per anchor, created together.
    evaluations = list(
        Evaluation.objects.filter(
            project=latest.project_id, task_set=demo.task, agent__name__in=demo.anchors, id__gt=latest.id - len(demo.anchors)
        )
        .select_related("agent")
        .order_by("id")
    )
    jobs = list(RolloutJob.objects.filter(evaluation__in=evaluations).select_related("agent", "episode").order_by("id"))
    active = any(e.status in ACTIVE for e in evaluations)
    ended_at = max((e.ended_at for e in evaluations if e.ended_at), default=None)
    if not active and (ended_at is None or (now - ended_at).total_seconds() > RECENT_S):
        return {}
    total = max(len(jobs), sum(len(e.seeds) for e in evaluations))
    finished = [j for j in jobs if j.status not in ACTIVE]
    running = [j for j in jobs if j.status == JobStatus.RUNNING]
    if not active:
        stage = "done"
    elif len(finished) == total:
        stage = "scoring"
    elif running or finished:
        stage = "running"
    else:
        stage = "queued"
    started = min(e.created_at for e in evaluations)
    return {
        "task": demo.task,
        "stage": stage,
        "stages": DEMO_STAGES,
        "total": total,
        "finished": len(finished),
        "steps": sum(j.episode.step_count for j in jobs if j.episode),
        "elapsed_s": ((ended_at if not active and ended_at else now) - started).total_seconds(),
        "current": [
            {"agent": j.agent.name, "seed": j.seed, "step": j.episode.step_count if j.episode else 0, "episode": j.episode_id}
            for j in running
        ],
    }


DEMO_STAGES = (("queued", "Queued"), ("running", "Running the anchors"), ("scoring", "Scoring"), ("done", "Done"))
