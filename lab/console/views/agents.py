"""Agent configs in the console: the project's agents with their teams, and one form to add or edit an agent.

The form goes through the API's serializer (lab.rollouts.agents_api.AgentConfigSerializer), so the console and
the API check the same things: endpoint rules, weights paths, secrets, and the team (lab.rollouts.teams). JSON
fields (sampling, harness, team) are text areas; a refused form is the page again with its values and the message
beside the field (400). Only owners and researchers see the form and may post it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from lab.console.views.launch_forms import launch_project, refused_fields
from lab.edge import json_loads_checked
from lab.errors import DomainError
from lab.pages import console_view, page, visible_projects, write_projects
from lab.rollouts.agents_api import AgentConfigSerializer
from lab.rollouts.local_models import local_agents_ensure
from lab.trajectories.models import AgentConfig, AgentKind
from lab.trajectories.selectors import agent_find, agent_find_by_name, agent_list
from training.model_store import store_models

AGENT_FIELDS = ("project", "name", "kind", "model", "endpoint", "sampling", "harness", "team")
_JSON_FIELDS = ("sampling", "harness", "team")


def _form_of(agent: AgentConfig) -> dict[str, str]:
    values = {name: getattr(agent, name) for name in ("name", "kind", "model", "endpoint")}
    json_values = {name: json.dumps(getattr(agent, name) or {}, indent=1) for name in _JSON_FIELDS}
    return {"project": agent.project.slug, **values, **json_values}


def team_summary(team: Any) -> str:
    """ "critic (every 5), consultant · harness guided" for the list; "" for a plain agent."""
    if not isinstance(team, dict) or not team:
        return ""
    roles = [
        role + (f" (every {team[role]['every']})" if isinstance(team[role], dict) and team[role].get("every") else "")
        for role in ("critic", "consultant")
        if team.get(role)
    ]
    roles += [f"{slot} slot" for slot in team.get("slots") or {}]
    level = f"harness {team['harness_level']}" if team.get("harness_level") else ""
    return " · ".join(part for part in (", ".join(roles), level) if part)


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    local_agents_ensure(projects=visible_projects(request))
    agents = list(agent_list(projects=visible_projects(request)))
    for agent in agents:
        agent.team_summary = team_summary(agent.team)  # type: ignore[attr-defined]
    return {
        "agents": agents,
        "launch_projects": write_projects(request),
        "kinds": AgentKind.values,
        "store_models": store_model_rows(),
        **extra,
    }


def store_model_rows() -> list[dict[str, Any]]:
    """The model store as the page lists it: name, size, and what the manifest says (parameters, context, licence, source)."""
    rows = []
    for entry in store_models(Path(settings.PRACTICUM_MODEL_STORE)):
        manifest = entry["manifest"]
        source = manifest.get("source") or {}
        rows.append(
            {
                "name": entry["name"],
                "megabytes": round(entry["bytes"] / 1e6),
                "display_name": manifest.get("display_name", ""),
                "parameters": f"{manifest['parameters'] / 1e6:.1f}M" if manifest.get("parameters") else "",
                "context": manifest.get("context_length", ""),
                "license": manifest.get("license", ""),
                "source": f"{source['package']}=={source['version']} ({source['file']})" if source.get("package") else "",
                "note": manifest.get("note", ""),
                "dtype": manifest.get("dtype", ""),
            }
        )
    return rows


@console_view
def agent_list_page(request: HttpRequest) -> HttpResponse:
    """GET: the agents; `?edit=<id>` fills the form with that agent. POST: add it, or edit the project's agent of that name."""
    if request.method != "POST":
        form: dict[str, str] = {"team": "{}", "sampling": "{}", "harness": "{}"}
        edit = request.GET.get("edit", "")
        if edit.isdigit():
            agent = agent_find(projects=visible_projects(request), pk=int(edit))
            form = _form_of(agent) if agent else form
        return page(request, "console/agents.html", _context(request, form=form, errors={}))
    try:
        agent = _agent_save(request)
    except DomainError as exc:
        return page(
            request, "console/agents.html", _context(request, form=request.POST, errors=refused_fields(exc, AGENT_FIELDS)), status=400
        )
    return redirect(f"/agents/?saved={agent.pk}")


def _agent_save(request: HttpRequest) -> AgentConfig:
    project = launch_project(request, "change agents")
    post = request.POST
    data: dict[str, Any] = {name: post.get(name, "").strip() for name in ("name", "kind", "model", "endpoint")}
    for name in _JSON_FIELDS:
        data[name] = json_loads_checked(post.get(name, "").strip() or "{}", path=name)
    existing = agent_find_by_name(project=project, name=data["name"])
    serializer = AgentConfigSerializer(instance=existing, data=data)
    if not serializer.is_valid():
        field, messages = next(iter(serializer.errors.items()))
        message = messages[0] if isinstance(messages, list) else messages
        raise DomainError("invalid_agent", f"{field}: {message}", path=field if field in AGENT_FIELDS else "form")
    try:
        with transaction.atomic():
            saved = serializer.save(project=project) if existing is None else serializer.save()
    except DomainError as exc:  # team and weights-path checks, with their own field path (team.critic.every)
        field = str(exc.details.get("path") or "form").split(".")[0]
        raise DomainError(exc.code, exc.message, path=field if field in AGENT_FIELDS else "form") from None
    except IntegrityError:
        raise DomainError("duplicate", f"an agent {data['name']!r} already exists in {project.slug}", path="name") from None
    assert isinstance(saved, AgentConfig)
    return saved
