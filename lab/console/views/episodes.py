"""The episodes list: filters from the trajectories selector, keyset pages, sortable columns."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from environments.trajectory import SOURCES
from lab.console.selectors import SORTS, episode_page
from lab.console.views.common import console_view, page, visible_projects
from lab.trajectories.models import AgentConfig, EpisodeStatus, Task
from lab.trajectories.selectors import FILTER_FIELDS, episode_list


@console_view
def episode_list_page(request: HttpRequest) -> HttpResponse:
    projects = visible_projects(request)
    filters = {name: request.GET.get(name, "") for name in FILTER_FIELDS}
    sort = request.GET.get("sort") or "-created"
    result = episode_page(episode_list(projects=projects, filters=filters), sort=sort, cursor=request.GET.get("cursor", ""))
    context = {
        "page": result,
        "filters": filters,
        "sorts": list(SORTS),
        "projects": projects,
        "tasks": Task.objects.filter(project__in=projects).values_list("env", "key").distinct().order_by("env", "key")[:200],
        "agents": AgentConfig.objects.filter(project__in=projects).values_list("name", flat=True).distinct().order_by("name")[:200],
        "sources": SOURCES,
        "statuses": EpisodeStatus.values,
    }
    return page(request, "console/episodes.html", context, fragment="console/_episode_rows.html")
