"""Reads of episodes, always scoped to the projects a caller can see."""

from __future__ import annotations

from typing import Any

from django.db.models import BooleanField, Case, Exists, OuterRef, Q, QuerySet, Value, When
from django.utils.dateparse import parse_datetime

from environments.core import ToolSpec
from lab.edge import float_param, int_param
from lab.errors import DomainError, NotFound
from lab.projects.models import Project
from lab.projects.selectors import visible_get
from lab.trajectories.models import AgentConfig, Episode, EpisodeStatus, IdempotencyRecord, ImportJob, Provenance, Step, Task
from lab.trajectories.shared import episode_header

FILTER_FIELDS = (
    "project",
    "env",
    "task",
    "agent",
    "source",
    "provenance",
    "status",
    "passed",
    "score_min",
    "score_max",
    "after",
    "before",
    "q",
    "seed",
)


def _float(filters: dict[str, Any], name: str) -> float | None:
    raw = filters.get(name)
    if raw in (None, ""):
        return None
    return float_param(raw, name=name, code="invalid_filter")


def _time(filters: dict[str, Any], name: str) -> Any:
    raw = filters.get(name)
    if raw in (None, ""):
        return None
    try:
        parsed = parse_datetime(raw)
    except ValueError:  # well formed but impossible, such as February 30
        parsed = None
    if parsed is None:
        raise DomainError("invalid_filter", f"{name}={raw!r} is not an ISO 8601 date-time")
    return parsed


def _by_id_or_name(episodes: QuerySet[Episode], key: Any, *, relation: str, name_field: str) -> QuerySet[Episode]:
    """Episodes whose `relation` (project, agent) is `key`: its id when `key` is all digits, else its `name_field`."""
    if str(key).isdigit():
        return episodes.filter(**{f"{relation}__pk": int_param(key, name=relation, code="invalid_filter")})
    return episodes.filter(**{f"{relation}__{name_field}": key})


def episode_list(*, projects: QuerySet, filters: dict[str, Any]) -> QuerySet[Episode]:
    """Episodes of `projects` matching `filters` (see FILTER_FIELDS); bad filter values raise DomainError."""
    episodes = Episode.objects.filter(project__in=projects).select_related("task", "agent", "project")
    if filters.get("project"):
        episodes = _by_id_or_name(episodes, filters["project"], relation="project", name_field="slug")
    if filters.get("env"):
        episodes = episodes.filter(task__env=filters["env"])
    if filters.get("task"):
        env, _, key = str(filters["task"]).rpartition("/")
        episodes = episodes.filter(task__key=key, **({"task__env": env} if env else {}))
    if filters.get("agent"):
        episodes = _by_id_or_name(episodes, filters["agent"], relation="agent", name_field="name")
    if filters.get("source"):
        episodes = episodes.filter(source=filters["source"])
    if filters.get("status") == "cancelled":  # a life cycle (Episode.life_cycle): finished, by someone stopping it
        episodes = episodes.filter(status=EpisodeStatus.FINISHED, termination_reason="cancelled")
    elif filters.get("status"):
        episodes = episodes.filter(status=filters["status"])
    if filters.get("provenance"):
        # A comma list, so that "external,upload" reads every episode the server did not record itself.
        tiers = [tier.strip() for tier in str(filters["provenance"]).split(",")]
        unknown = [tier for tier in tiers if tier not in Provenance.values]
        if unknown:
            raise DomainError("invalid_filter", f"provenance={unknown[0]!r}; use one of {', '.join(Provenance.values)}", path="provenance")
        episodes = episodes.filter(provenance__in=tiers)
    if filters.get("seed") not in (None, ""):
        episodes = episodes.filter(seed=int_param(filters["seed"], name="seed", code="invalid_filter"))
    if filters.get("passed") not in (None, ""):
        value = str(filters["passed"]).lower()
        if value not in ("true", "false", "1", "0"):
            raise DomainError("invalid_filter", f"passed={filters['passed']!r}; use true or false")
        episodes = episodes.filter(passed=value in ("true", "1"))
    low, high = _float(filters, "score_min"), _float(filters, "score_max")
    if low is not None:
        episodes = episodes.filter(composite__gte=low)
    if high is not None:
        episodes = episodes.filter(composite__lte=high)
    after, before = _time(filters, "after"), _time(filters, "before")
    if after is not None:
        episodes = episodes.filter(created_at__gte=after)
    if before is not None:
        episodes = episodes.filter(created_at__lt=before)
    if filters.get("q"):
        text = str(filters["q"])[:200]
        episodes = episodes.filter(Exists(Step.objects.filter(episode=OuterRef("pk"), message__icontains=text)))
    return episodes


def episode_get(*, projects: QuerySet, pk: int | str) -> Episode:
    try:
        return Episode.objects.select_related("task", "agent", "project").get(pk=int_param(pk, name="id", low=1), project__in=projects)
    except (Episode.DoesNotExist, DomainError):
        raise NotFound("not_found", f"No episode {pk!r} that you can see.") from None


def episode_list_running(*, projects: QuerySet) -> QuerySet[Episode]:
    """The episodes of `projects` still running, newest first."""
    return Episode.objects.filter(project__in=projects, status=EpisodeStatus.RUNNING).select_related("task", "agent").order_by("-id")


def import_job_list(*, projects: QuerySet) -> QuerySet[ImportJob]:
    """The imports of `projects`, newest first."""
    return ImportJob.objects.filter(project__in=projects).select_related("project").order_by("-pk")


def import_job_get(*, projects: QuerySet, pk: int) -> ImportJob:
    return visible_get(import_job_list(projects=projects), pk=pk, what="import")


def episode_list_by_pk(*, pks: list[int]) -> QuerySet[Episode]:
    """The episodes `pks` in id order, for a row that already names them (an import job's episode ids): not scoped,
    the caller scoped the row that named them."""
    return Episode.objects.filter(pk__in=pks).select_related("task").order_by("pk")


def step_list_recent(*, episode: Episode, count: int) -> list[Step]:
    """The episode's last `count` steps, newest first."""
    return list(Step.objects.filter(episode=episode).order_by("-index")[:count])


def task_choices_for(*, projects: QuerySet) -> dict[str, Any]:
    """What a filter form offers of the projects' tasks: (env, key) pairs, environments and environment versions."""
    tasks = Task.objects.filter(project__in=projects)
    return {
        "tasks": tasks.values_list("env", "key").distinct().order_by("env", "key")[:200],
        "envs": tasks.values_list("env", flat=True).distinct().order_by("env"),
        "versions": tasks.exclude(env_version="").values_list("env_version", flat=True).distinct().order_by("env_version"),
    }


# --- agent configs ---------------------------------------------------------------------------------------------


def agent_list(*, projects: QuerySet) -> QuerySet[AgentConfig]:
    """The agents of `projects`, by project then name."""
    return AgentConfig.objects.filter(project__in=projects).select_related("project").order_by("project__slug", "name")


def agent_names(*, projects: QuerySet) -> QuerySet:
    """The distinct agent names of `projects` (at most 200), for a filter form."""
    return AgentConfig.objects.filter(project__in=projects).values_list("name", flat=True).distinct().order_by("name")[:200]


def agent_find(*, projects: QuerySet, pk: int) -> AgentConfig | None:
    """The agent `pk` of `projects`, or None."""
    return AgentConfig.objects.filter(project__in=projects, pk=pk).first()


def agent_find_by_name(*, project: Project, name: str) -> AgentConfig | None:
    """The project's agent called `name`, or None (names are unique within a project)."""
    return AgentConfig.objects.filter(project=project, name=name).first()


def agent_list_for_project(*, project: Project, exclude_kinds: tuple[str, ...] = ()) -> QuerySet[AgentConfig]:
    """The project's agents by name, less those of `exclude_kinds`."""
    return AgentConfig.objects.filter(project=project).exclude(kind__in=exclude_kinds).order_by("name")


def agent_names_runnable(*, projects: QuerySet, kinds: tuple[str, ...]) -> set[str]:
    """The names of the projects' agents of `kinds` that are not disabled."""
    return set(AgentConfig.objects.filter(project__in=projects, kind__in=kinds, disabled_reason="").values_list("name", flat=True))


def agent_list_enabled(*, projects: QuerySet, exclude_kinds: tuple[str, ...] = ()) -> QuerySet[AgentConfig]:
    """The projects' agents that are not disabled, less those of `exclude_kinds`."""
    return AgentConfig.objects.filter(project__in=projects, disabled_reason="").exclude(kind__in=exclude_kinds)


def agent_list_disabled(*, projects: QuerySet) -> QuerySet[AgentConfig]:
    """The projects' disabled agents (at most 50)."""
    return AgentConfig.objects.filter(project__in=projects).exclude(disabled_reason="")[:50]


def idempotency_record_find(*, project: Project, key: str) -> IdempotencyRecord | None:
    return IdempotencyRecord.objects.filter(project=project, key=key).first()


def episode_list_failed(*, project: Project, task: str = "") -> QuerySet[Episode]:
    """The project's failed episodes (not passed, or ended in failure), newest first: what a diagnosis job is
    offered. `task` is "env/key" or "key"."""
    episodes = Episode.objects.filter(project=project).filter(Q(passed=False) | Q(status=EpisodeStatus.FAILED))
    if task:
        env, _, key = task.rpartition("/")
        episodes = episodes.filter(task__key=key, **({"task__env": env} if env else {}))
    return episodes.select_related("task", "agent").order_by("-created_at", "-id")


def episode_ids_failed_finished(*, project: Project, task: str = "", limit: int) -> list[int]:
    """The ids of the project's finished, failed episodes (branches left out), newest first, at most `limit`: what
    manage.py diagnose takes by default. `task` is "env/key"."""
    failed = Episode.objects.filter(project=project, passed=False, status=EpisodeStatus.FINISHED).exclude(source="branch")
    if task:
        env, _, key = task.partition("/")
        failed = failed.filter(task__env=env, task__key=key)
    return list(failed.order_by("-id").values_list("pk", flat=True)[:limit])


def episode_list_to_coach(*, project: Project, ids: list[int] | None = None) -> list[Episode]:
    """The project's episodes that are not running, by id: those `ids`, else every one with a user turn."""
    episodes = Episode.objects.filter(project=project).exclude(status=EpisodeStatus.RUNNING)
    episodes = episodes.filter(pk__in=ids) if ids is not None else episodes.filter(steps__role="user").distinct()
    return list(episodes.order_by("id"))


def episode_list_siblings(*, episode: Episode) -> QuerySet[Episode]:
    """The project's other episodes of the same task and seed, those of the same environment version first, then best
    score first: what the viewer offers to compare (a human beside every agent and anchor that played the seed).

    Matched on the task's environment and key, not its row: a task played under two environment versions is two rows,
    and an episode of the other version is still the same task and seed, shown with its version (`same_version`: False
    only where both versions are known and differ; a record without one, as anchors' are, is not claimed to differ)."""
    task = episode.task
    siblings = Episode.objects.filter(project=episode.project, task__env=task.env, task__key=task.key, seed=episode.seed).exclude(
        pk=episode.pk
    )
    same_version: Value | Case = Value(True, output_field=BooleanField())
    if task.env_version:
        same_or_unknown = When(task__env_version__in=["", task.env_version], then=Value(True))
        same_version = Case(same_or_unknown, default=Value(False), output_field=BooleanField())
    return siblings.select_related("agent", "task").annotate(same_version=same_version).order_by("-same_version", "-composite", "pk")


def env_versions_differ(a: str, b: str) -> bool:
    """Two environment versions are known to differ only when both are recorded: "" is unknown, not a version."""
    return bool(a and b and a != b)


def episode_tools(episode: Episode) -> dict[str, ToolSpec]:
    """The tools the episode was played with, from its header (OpenAI function schemas)."""
    tools: dict[str, ToolSpec] = {}
    for entry in episode_header(episode).get("tools") or []:
        function = entry.get("function", entry) if isinstance(entry, dict) else {}
        if isinstance(function.get("name"), str) and isinstance(function.get("parameters"), dict):
            tools[function["name"]] = ToolSpec(
                name=function["name"], description=function.get("description", ""), parameters=function["parameters"]
            )
    return tools


def episode_in_play_by(*, episode: Episode, user: Any) -> bool:
    """True while `user` is playing this episode (a running human session). Their view of it is then the play
    page, where every look at the world is a charged tool call: the viewer's step events and its analyses (credit,
    a pivotal search that runs anchors from the player's steps) would be free reads. Others spectate as usual."""
    return episode.status == EpisodeStatus.RUNNING and episode.source == "human" and episode.created_by_id == getattr(user, "pk", None)
