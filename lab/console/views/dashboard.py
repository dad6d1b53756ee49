"""The dashboard: my projects, a leaderboard snapshot, running jobs and recent episodes, all polled; when the
user's projects hold nothing yet, the first-run demo (lab.rollouts.demo) to those who may launch it, and its
progress card (stage, episodes finished, the ones under way) while it runs."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from lab.console.selectors import episode_page, leaderboard
from lab.pages import console_view, is_htmx, page, visible_projects, write_projects
from lab.rollouts.demo import demo_offer, demo_progress
from lab.rollouts.selectors import evaluation_list_active
from lab.runs.selectors import run_list_active
from lab.trajectories.selectors import episode_list, episode_list_running


@console_view
def dashboard(request: HttpRequest) -> HttpResponse:
    projects = visible_projects(request)
    context = {
        "projects": projects,
        "recent": episode_page(episode_list(projects=projects, filters={}), size=15).rows,
        "running": episode_list_running(projects=projects)[:20],
        "runs": run_list_active(projects=projects)[:10],
        "evaluations": evaluation_list_active(projects=projects)[:10],
        "board": leaderboard(projects=projects).overall[:8],
    }
    if not context["recent"] and not context["evaluations"] and not context["runs"]:
        context.update(demo_offer(projects=write_projects(request)))
    if not is_htmx(request):  # the card polls for itself (demo_progress_card)
        context["demo_progress"] = demo_progress(projects=projects)
    return page(request, "console/dashboard.html", context, fragment="console/_dashboard_body.html")


@console_view
def demo_progress_card(request: HttpRequest) -> HttpResponse:
    """The first-run demo's progress card, polled every second while it runs (it stops polling once done)."""
    context = {"progress": demo_progress(projects=visible_projects(request))}
    return page(request, "console/_demo_progress.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True, "database": connection.vendor})
