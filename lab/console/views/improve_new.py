""" "Improve this agent": from a finished evaluation, pick failing episodes (filter by task and termination, select
all), a diagnoser, the dataset's sources and weights, a recipe with its defaults for the base model, dev and test
seeds; the form starts an improvement loop (lab.improve.services.loop_create) and goes to the loop's page.

One view serves the page and, to htmx (the filter form), the episode table. A refused form is the page again with
its values and the message beside the field (400); the leakage guard's refusal names the task and seed.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from environments import registry
from environments.policies import policy_names
from lab.console.views.launch_forms import config_parse, refused_fields, require_write, seeds_parse
from lab.errors import DomainError
from lab.improve.config import DEFAULTS, DIAGNOSERS, RECIPES, SOURCES, recipe_defaults
from lab.improve.services import failing_episodes, loop_create
from lab.pages import console_view, page, visible_projects
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episodes, evaluation_get
from lab.trajectories.models import AgentKind
from lab.trajectories.selectors import agent_list_for_project
from training.dataset_check import partial_ending

LOOP_FIELDS = (
    "episodes",
    "diagnoser",
    "diagnoser.name",
    "sources",
    "include_partial",
    "anchor",
    "anchor_seeds",
    "recipe",
    "recipe_config",
    "base_model",
    "dev_seeds",
    "test_seeds",
    "dev_task_set",
    "test_task_set",
    "name",
    "config",
    "evaluation",
)


def _filtered(evaluation: Evaluation, params: Any) -> list[Any]:
    episodes = failing_episodes(evaluation)
    task, reason = params.get("task", "").strip(), params.get("reason", "").strip()
    return [e for e in episodes if (not task or e.task.key == task) and (not reason or e.termination_reason == reason)]


def improve_context(
    request: HttpRequest, evaluation: Evaluation, *, form: Any = None, errors: dict[str, str] | None = None
) -> dict[str, Any]:
    form = form if form is not None else request.GET
    env = registry.task_set(evaluation.task_set)[0].env
    agent = evaluation.agent
    base_model = form.get("base_model") or (agent.model if agent.kind == AgentKind.HF else "")
    recipe = form.get("recipe") if form.get("recipe") in RECIPES else DEFAULTS["recipe"]  # a refused recipe shows the default's settings
    defaults = {name: recipe_defaults(name, base_model=base_model, env=env) for name in RECIPES}
    failing = failing_episodes(evaluation)
    picked = set(form.getlist("episodes")) if hasattr(form, "getlist") and "episodes" in form else None
    weights = {name: form.get(f"weight-{name}", DEFAULTS["sources"][name]) for name in SOURCES}
    successes = [e for e in evaluation_episodes(evaluation) if e.passed]
    partial_successes = [(e, partial_ending({"header": {"termination_reason": e.termination_reason}})) for e in successes]
    return {
        "successes": len(successes),
        "partial_successes": [(e, ending) for e, ending in partial_successes if ending],
        "include_partial": form.get("include_partial") == "on",
        "evaluation": evaluation,
        "env": env,
        "episodes": _filtered(evaluation, form),
        "picked": picked,
        "tasks": sorted({e.task.key for e in failing}),
        "reasons": sorted({e.termination_reason or "" for e in failing} - {""}),
        "anchors": policy_names(env),
        "default_anchor": registry.env_meta(env).default_anchor,
        "diagnosers": DIAGNOSERS,
        "agents": agent_list_for_project(project=evaluation.project, exclude_kinds=(AgentKind.EXTERNAL,)),
        "recipe_options": [(name, json.dumps(values)) for name, values in defaults.items()],
        "recipe": recipe,
        "recipe_config": form.get("recipe_config") or json.dumps(defaults[recipe]),
        "base_model": base_model,
        "weights": weights,
        "form": form,
        "errors": errors or {},
    }


@console_view
def improve_new(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = evaluation_get(projects=visible_projects(request), pk=pk)
    require_write(request, evaluation.project, "start improvement loops")
    if request.method != "POST":
        context = improve_context(request, evaluation)
        return page(request, "console/improve_new.html", context, fragment="console/_improve_episodes.html")
    post = request.POST
    try:
        loop = loop_create(
            project=evaluation.project,
            evaluation=evaluation,
            config=_config(post),
            episode_ids=_episode_ids(post),
            name=post.get("name", "").strip(),
            user=request.user,
        )
    except DomainError as exc:
        errors = {
            ("diagnoser" if field == "diagnoser.name" else field): message for field, message in refused_fields(exc, LOOP_FIELDS).items()
        }
        errors = {(field if field in LOOP_FIELDS else "form"): message for field, message in errors.items()}
        return page(request, "console/improve_new.html", improve_context(request, evaluation, form=post, errors=errors), status=400)
    return redirect("loop", pk=loop.pk)


def _episode_ids(post: Any) -> list[int]:
    raw = post.getlist("episodes")
    if not raw:
        raise DomainError("invalid_episodes", "pick at least one failing episode", path="episodes")
    if not all(value.isdigit() and len(value) < 19 for value in raw):
        raise DomainError("invalid_episodes", f"episodes must be episode ids, got {raw[:5]!r}", path="episodes")
    return [int(value) for value in raw]


def _config(post: Any) -> dict[str, Any]:
    weights = {}
    for name in SOURCES:
        raw = post.get(f"weight-{name}", "").strip() or "0"
        try:
            weights[name] = float(raw)
        except ValueError:
            raise DomainError("invalid_loop", f"sources.{name}: a number from 0 to 10, got {raw[:40]!r}", path="sources") from None
    kind, _, name = post.get("diagnoser", "rule:").partition(":")
    config: dict[str, Any] = {
        "diagnoser": {"kind": kind, "name": name},
        "sources": weights,
        "include_partial": post.get("include_partial") == "on",
        "recipe": post.get("recipe", "").strip(),
        "base_model": post.get("base_model", "").strip(),
        "dev_seeds": _seeds(post, "dev_seeds"),
        "test_seeds": _seeds(post, "test_seeds"),
    }
    if post.get("anchor_seeds", "").strip():
        config["anchor_seeds"] = _seeds(post, "anchor_seeds")
    try:
        config["recipe_config"] = config_parse(post.get("recipe_config", ""))
    except DomainError as exc:
        raise DomainError(exc.code, exc.message, path="recipe_config") from None
    return config


def _seeds(post: Any, field: str) -> list[int]:
    try:
        return seeds_parse(post.get(field, ""))
    except DomainError as exc:
        raise DomainError(exc.code, exc.message, path=field) from None
