"""The leaderboard: humans, agents and anchors per scenario and overall, filtered by split and env version.

Ranked on recorded episodes only; external and uploaded scores follow in their own, labelled section."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from lab.console.selectors import leaderboard
from lab.pages import console_view, page, visible_projects
from lab.trajectories.models import SCORED_TIERS, UNVERIFIED_TIERS, Split
from lab.trajectories.selectors import task_choices_for


@console_view
def leaderboard_page(request: HttpRequest) -> HttpResponse:
    projects = visible_projects(request)
    filters: dict[str, Any] = {name: request.GET.get(name, "") for name in ("env", "split", "env_version", "task")}
    choices = task_choices_for(projects=projects)
    context = {
        "board": leaderboard(projects=projects, tiers=SCORED_TIERS, **filters),
        "reported": leaderboard(projects=projects, tiers=UNVERIFIED_TIERS, **filters),
        "filters": filters,
        "splits": Split.values,
        "envs": choices["envs"],
        "versions": choices["versions"],
    }
    return page(request, "console/leaderboard.html", context, fragment="console/_leaderboard_tables.html")
