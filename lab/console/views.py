"""Console pages. Server-rendered; htmx requests get the page's fragment (STYLE.md, htmx)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from lab.projects.selectors import project_list_for
from lab.trajectories.models import Episode


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    projects = project_list_for(user=request.user)
    recent = Episode.objects.filter(project__in=projects).select_related("task", "agent", "project")[:20]
    running = Episode.objects.filter(project__in=projects, status="running").select_related("task")[:20]
    return render(request, "console/dashboard.html", {"projects": projects, "recent": recent, "running": running})


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True, "database": connection.vendor})
