"""The fidelity report in the lab: a project's human user sessions against a simulator's, compared by
training.fidelity (pure Python), for the page (/fidelity/) and the API (/api/v1/fidelity) alike.

    report = fidelity_for(projects=visible, params=request.GET)     # DomainError (400/404) on a bad parameter

Parameters: `project` (id or slug, required: a report reads one project); the human set with `human_<filter>`
and the simulated set with `sim_<filter>` (any episode filter: env, task, agent, source, provenance, q, ...),
plus `sim_user_agent`, the name of the agent config that filled the user slot (the header's team.slots.user).
A human set's turns are user-slot steps with source "human"; a simulated set's, user-slot steps of any other
source. `max_episodes` (default and ceiling: settings.PRACTICUM_FIDELITY_MAX_EPISODES) bounds each set,
newest first, so the report stays cheap enough to compute inline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from lab.edge import int_param
from lab.errors import DomainError, NotFound
from lab.projects.models import Project
from lab.trajectories.models import Episode, Step
from lab.trajectories.selectors import FILTER_FIELDS, episode_list
from training.fidelity import fidelity_report

SET_FILTERS = tuple(name for name in FILTER_FIELDS if name != "project")
HUMAN = "human"


def fidelity_params() -> list[str]:
    """Every query parameter the report reads (the API's schema lists them)."""
    return ["project", "max_episodes", *(f"{side}_{name}" for side in ("human", "sim") for name in SET_FILTERS), "sim_user_agent"]


def _project(projects: QuerySet[Project], key: str) -> Project:
    if not key:
        raise DomainError("missing_parameter", "project: name the project (its id or slug) whose sessions to compare", path="project")
    found = projects.filter(pk=int_param(key, name="project", low=1)) if key.isdigit() else projects.filter(slug=key)
    project = found.first()
    if project is None:
        raise NotFound("not_found", f"No project {key!r} that you can see.")
    return project


def _user_steps(*, human: bool) -> QuerySet[Step]:
    steps = Step.objects.filter(role="user")
    return steps.filter(source=HUMAN) if human else steps.exclude(source=HUMAN)


def _episodes(projects: QuerySet[Project], project: Project, params: Mapping[str, Any], side: str, *, human: bool) -> QuerySet[Episode]:
    filters = {name: params.get(f"{side}_{name}", "") for name in SET_FILTERS}
    episodes = episode_list(projects=projects, filters={**filters, "project": str(project.pk)})
    if side == "sim" and params.get("sim_user_agent"):
        episodes = episodes.filter(meta__header__team__slots__user__policy__name=str(params["sim_user_agent"])[:200])
    return episodes.filter(Exists(_user_steps(human=human).filter(episode=OuterRef("pk"))))


def _records(episode_ids: list[int], *, human: bool) -> list[dict[str, Any]]:
    """The user turns of the episodes as minimal records (only what the report reads)."""
    by_episode: dict[int, list[dict[str, Any]]] = {pk: [] for pk in episode_ids}
    rows = _user_steps(human=human).filter(episode_id__in=episode_ids).order_by("episode_id", "index")
    for episode_id, index, source, message, extra in rows.values_list("episode_id", "index", "source", "message", "extra"):
        meta = (extra or {}).get("meta") if isinstance(extra, dict) else None
        by_episode[episode_id].append({"index": index, "source": source, "role": "user", "message": message, "meta": meta or {}})
    return [{"steps": steps} for steps in by_episode.values()]


def fidelity_for(*, projects: QuerySet[Project], params: Mapping[str, Any]) -> dict[str, Any]:
    """The report as JSON: the sets chosen (episodes counted and used) and training.fidelity's comparison."""
    project = _project(projects, str(params.get("project") or "").strip())
    ceiling = settings.PRACTICUM_FIDELITY_MAX_EPISODES
    raw_max = params.get("max_episodes")
    limit = ceiling if raw_max in (None, "") else int_param(raw_max, name="max_episodes", low=1, high=ceiling)
    chosen: dict[str, Any] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    for side, human in (("human", True), ("sim", False)):
        episodes = _episodes(projects, project, params, side, human=human)
        ids = list(episodes.order_by("-created_at", "-pk").values_list("pk", flat=True)[:limit])
        chosen[side] = {
            "episodes": len(ids),
            "matching": episodes.count(),
            "filters": {k: v for k, v in params.items() if k.startswith(f"{side}_") and v},
        }
        records[side] = _records(ids, human=human)
    return {
        "project": {"id": project.pk, "slug": project.slug},
        "max_episodes": limit,
        "human": chosen["human"],
        "simulated": chosen["sim"],
        "report": fidelity_report(records["human"], records["sim"]),
    }
