"""The episodes list: filters from the trajectories selector, keyset pages, sortable columns; "Start a rollout"."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from environments.trajectory import SOURCES
from lab.console.selectors import SORTS, episode_page
from lab.console.views.launch_forms import launch_context
from lab.pages import console_view, page, visible_projects
from lab.rollouts.selectors import rollout_job_find
from lab.trajectories.models import EpisodeStatus, Provenance
from lab.trajectories.selectors import FILTER_FIELDS, agent_names, episode_list, task_choices_for


def episode_list_context(request: HttpRequest, *, rollout_form: Any = None, rollout_errors: dict[str, str] | None = None) -> dict[str, Any]:
    """The list for the query string's filters, plus the rollout form (values and field errors of a refused launch)."""
    projects = visible_projects(request)
    filters = {name: request.GET.get(name, "") for name in FILTER_FIELDS}
    sort = request.GET.get("sort") or "-created"
    result = episode_page(episode_list(projects=projects, filters=filters), sort=sort, cursor=request.GET.get("cursor", ""))
    launched = request.GET.get("rollout", "")
    return {
        "page": result,
        "filters": filters,
        "sorts": list(SORTS),
        "projects": projects,
        "tasks": task_choices_for(projects=projects)["tasks"],
        "agents": agent_names(projects=projects),
        "sources": SOURCES,
        "provenances": Provenance.values,
        "statuses": [*EpisodeStatus.values, "cancelled"],  # the life cycles Episode.life_cycle names
        "launched": rollout_job_find(projects=projects, pk=int(launched)) if launched.isdigit() else None,
        **launch_context(request),
        "form": rollout_form or {},
        "errors": rollout_errors or {},
    }


@console_view
def episode_list_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/episodes.html", episode_list_context(request), fragment="console/_episode_rows.html")
