"""What the launch forms share: the project a launch goes to, the choices the forms offer, input parsing.

Only owners and researchers (WRITE_ROLES) see the forms and may post them: a project the user cannot see
answers 404, a project where their role is lower answers 403, as in the API (lab.projects.permissions).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

import training
from environments import registry, seeds
from environments.core import EnvError
from environments.policies import policy_names
from lab.edge import json_loads_checked
from lab.errors import DomainError, Forbidden, NotFound
from lab.pages import is_htmx, page, role_of, visible_projects, write_projects
from lab.projects.models import WRITE_ROLES, Project
from lab.rollouts.local_models import local_agents_ensure
from lab.runs.services import LAB_FIELDS
from lab.trajectories.models import AgentKind
from lab.trajectories.selectors import FILTER_FIELDS, agent_list_disabled, agent_names_runnable
from training.config import field_docs

DATASET_FIELDS = tuple(name for name in FILTER_FIELDS if name != "project")  # the run's own project scopes its dataset
RUNNABLE_KINDS = (AgentKind.SCRIPTED, AgentKind.HF, AgentKind.VLLM, AgentKind.OPENAI)


def require_write(request: HttpRequest, project: Project, action: str) -> None:
    role = role_of(request, project)
    if role not in WRITE_ROLES:
        raise Forbidden("forbidden", f"A {role} may not {action}; ask a project owner for a higher role.")


@dataclasses.dataclass(frozen=True)
class JobPage:
    """Where a job's console page answers a POST on it: its status `fragment`, built by `context(request, job)`, for
    htmx; the page named `url_name` for a plain form post."""

    fragment: str
    context: Callable[[HttpRequest, Any], dict[str, Any]]
    url_name: str


def job_post(
    request: HttpRequest, pk: int, *, get: Callable[..., Any], action: str, act: Callable[[Any], object], answer: JobPage
) -> HttpResponse:
    """A console POST on one job (cancel, resume, promote): `get` (a selector taking projects and pk) finds it, 404 if
    the caller cannot see it, 403 below WRITE_ROLES; `act(job)` calls the service; the answer shows the job read again."""
    job = get(projects=visible_projects(request), pk=pk)
    require_write(request, job.project, action)
    act(job)
    job = get(projects=visible_projects(request), pk=pk)  # what the service changed, with the selector's annotations
    if is_htmx(request):
        return page(request, answer.fragment, answer.context(request, job))
    return redirect(answer.url_name, pk=job.pk)


def launch_project(request: HttpRequest, action: str) -> Project:
    """The project named by the form's `project` field (slug), or the user's only project; 404 if unseen, 403 if read-only."""
    return launch_project_get(request, request.POST.get("project", ""), action)


def launch_project_get(request: HttpRequest, slug: str, action: str) -> Project:
    """launch_project for a project slug given otherwise (a form's GET preview)."""
    slug = slug.strip()
    visible = visible_projects(request)
    if slug:
        project = visible.filter(slug=slug).first()
        if project is None:
            raise NotFound("not_found", f"No project {slug!r} that you can see.")
    else:
        candidates = list(visible[:2])
        if len(candidates) != 1:
            raise DomainError("project_required", "choose the project", path="project")
        project = candidates[0]
    require_write(request, project, action)
    return project


MAX_SEEDS = 1000  # as many as the API takes in one evaluation


def seeds_parse(raw: str) -> list[int]:
    """ "0,1,2" or "0 1 2" or a range "0-4" into integers (environments.seeds); anything else is a field error on `seeds`."""
    try:
        return seeds.seeds_parse(raw, maximum=settings.PRACTICUM_MAX_SEEDS)
    except seeds.SeedError as exc:
        raise DomainError("invalid_seeds", str(exc), path="seeds") from None


def seed_parse(raw: str) -> int:
    value = raw.strip()
    if not value.lstrip("-").isdigit():
        raise DomainError("invalid_seed", f"seed must be a whole number, got {raw[:40]!r}", path="seed")
    try:
        return seeds.seed_parse(value)
    except seeds.SeedError as exc:
        raise DomainError("invalid_seed", f"seed: {exc}", path="seed") from None


def config_parse(raw: str) -> dict[str, Any]:
    """A JSON object, or `key = value` lines whose values are read as JSON when they parse (numbers, booleans,
    lists) and as text otherwise."""
    text = raw.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json_loads_checked(text, path="config")
        except DomainError as exc:
            raise DomainError("invalid_config", exc.message, path="config") from None
        if not isinstance(value, dict):
            raise DomainError("invalid_config", "config must be a JSON object", path="config")
        return value
    config: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value_text = line.partition("=")
        if not sep or not key.strip():
            raise DomainError("invalid_config", f"line {number}: {line.strip()!r} is not key=value", path="config")
        try:
            config[key.strip()] = json_loads_checked(value_text.strip(), path=f"config.{key.strip()}")
        except DomainError as exc:
            if exc.code != "invalid_json" or "not valid JSON" not in exc.message:
                raise DomainError("invalid_config", f"line {number}: {exc.message}", path="config") from None
            config[key.strip()] = value_text.strip()
    return config


def env_of(task_set: str) -> str:
    try:
        return registry.task_set(task_set)[0].env
    except EnvError as exc:
        raise DomainError(exc.code, exc.message, path="task_set") from exc


@dataclasses.dataclass(frozen=True)
class RecipeField:
    name: str
    default: str
    doc: str


@functools.cache
def recipe_fields() -> dict[str, list[RecipeField]]:
    """Per recipe, the config fields a user may set (the lab sets model, output_dir and data), with defaults and docs."""
    table: dict[str, list[RecipeField]] = {}
    for recipe in training.RECIPES:
        cls = training.recipe_config_class(recipe)
        docs = field_docs(cls)
        table[recipe] = [
            RecipeField(f.name, json.dumps(_default(f)), docs.get(f.name, "")) for f in dataclasses.fields(cls) if f.name not in LAB_FIELDS
        ]
    return table


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory() if field.default_factory is not dataclasses.MISSING else None


def task_choices() -> list[str]:  # not cached: an environment discovered later (registry.rediscover) is offered too
    return [t.id for t in registry.list_tasks()]


def task_set_choices() -> list[str]:
    envs = sorted({t.env for t in registry.list_tasks()})
    return [f"{env}/{split}" for env in envs for split in ("eval", "dev", "train", "all")] + task_choices()


def agent_choices(projects: QuerySet[Project]) -> list[str]:
    """The projects' runnable agents (the local real model's among them), then every environment's anchors (created
    in the project on first use)."""
    local_agents_ensure(projects=projects)
    names = agent_names_runnable(projects=projects, kinds=RUNNABLE_KINDS)
    anchors = {name for env in {t.env for t in registry.list_tasks()} for name in policy_names(env)}
    return sorted(names) + sorted(anchors - names)


def disabled_agents(projects: QuerySet[Project]) -> list[dict[str, str]]:
    """The projects' disabled agents with the reason, shown under the forms instead of being offered."""
    return [{"name": agent.name, "disabled_reason": agent.disabled_reason} for agent in agent_list_disabled(projects=projects)]


def launch_context(request: HttpRequest) -> dict[str, Any]:
    """The choices of the evaluation and rollout forms; `launch_projects` is empty for read-only users (no forms)."""
    projects = write_projects(request)
    if not projects.exists():
        return {"launch_projects": []}
    return {
        "launch_projects": projects,
        "agent_choices": agent_choices(projects),
        "disabled_agents": disabled_agents(projects),
        "task_choices": task_choices(),
        "task_set_choices": task_set_choices(),
    }


def error_fields(exc: DomainError, known: tuple[str, ...], default: str = "form") -> dict[str, str]:
    """A DomainError as {form field: message}: by its `path`, else by its `fields` that are form fields, else `default`."""
    path = exc.details.get("path")
    if path:
        return {str(path): exc.message}
    named = [f for f in exc.details.get("fields") or [] if f in known]
    return {f: exc.message for f in named} or {default: exc.message}


def refused_fields(exc: DomainError, known: tuple[str, ...]) -> dict[str, str]:
    """Field errors for a form; 403 and 404 are not the form's fault and go up as error pages."""
    if exc.status in (403, 404) and exc.code in ("forbidden", "not_found"):
        raise exc
    return error_fields(exc, known)
