"""Diagnoses across the visible projects, filtered by category, origin, verification and task."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from lab.console.views.common import console_view, page, visible_projects
from lab.diagnoses.models import CATEGORIES, Diagnosis, Origin, Verification
from lab.edge import int_param


@console_view
def diagnosis_list(request: HttpRequest) -> HttpResponse:
    filters = {name: request.GET.get(name, "") for name in ("category", "origin", "verification", "task", "episode")}
    diagnoses = Diagnosis.objects.filter(episode__project__in=visible_projects(request)).select_related("episode__task", "author")
    for name in ("category", "origin", "verification"):
        if filters[name]:
            diagnoses = diagnoses.filter(**{name: filters[name]})
    if filters["task"]:
        diagnoses = diagnoses.filter(episode__task__key=filters["task"].rpartition("/")[2])
    if filters["episode"].isdigit():
        diagnoses = diagnoses.filter(episode_id=int_param(filters["episode"], name="episode"))
    context = {"diagnoses": diagnoses[:200], "filters": filters, "categories": CATEGORIES, "origins": Origin.values,
               "verifications": Verification.values}  # fmt: skip
    return page(request, "console/diagnoses.html", context, fragment="console/_diagnosis_rows.html")
