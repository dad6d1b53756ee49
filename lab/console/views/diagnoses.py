"""Diagnoses across the visible projects, filtered by category, origin, verification and task; editing one."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect

from lab.diagnoses.models import CATEGORIES, Origin, Verification
from lab.diagnoses.selectors import DIAGNOSIS_FILTERS, diagnosis_get, diagnosis_list
from lab.diagnoses.services import diagnosis_may_edit, diagnosis_update
from lab.errors import DomainError, Forbidden
from lab.pages import console_view, page, role_of, visible_projects


@console_view
def diagnosis_list_page(request: HttpRequest) -> HttpResponse:
    filters = {name: request.GET.get(name, "") for name in DIAGNOSIS_FILTERS}
    diagnoses = diagnosis_list(projects=visible_projects(request), filters=filters)
    context = {
        "diagnoses": diagnoses[:200],
        "filters": filters,
        "categories": CATEGORIES,
        "origins": Origin.values,
        "verifications": Verification.values,
    }
    return page(request, "console/diagnoses.html", context, fragment="console/_diagnosis_rows.html")


@console_view
def diagnosis_edit(request: HttpRequest, pk: int) -> HttpResponseBase:
    """Its author or a project owner changes what a diagnosis says; the service clears a verdict it had."""
    diagnosis = diagnosis_get(projects=visible_projects(request), pk=pk)
    role = role_of(request, diagnosis.episode.project_id)
    if not diagnosis_may_edit(diagnosis=diagnosis, user=request.user, role=role):
        raise Forbidden("forbidden", f"Only its author or a project owner may change diagnosis {diagnosis.pk}.")
    errors: dict[str, str] = {}
    form = (
        request.POST
        if request.method == "POST"
        else {"step_index": diagnosis.step_index, "category": diagnosis.category, "explanation": diagnosis.explanation}
    )
    if request.method == "POST":
        raw_step = request.POST.get("step_index", "")
        if not raw_step.strip().isdigit():
            errors["step_index"] = f"{raw_step!r} is not a step number"
        else:
            changes = {
                "step_index": int(raw_step),
                "category": request.POST.get("category", ""),
                "explanation": request.POST.get("explanation", ""),
            }
            try:
                diagnosis_update(diagnosis=diagnosis, user=request.user, role=role, changes=changes)
            except DomainError as exc:
                errors[str(exc.details.get("path", "form"))] = exc.message
        if not errors:
            return redirect(f"/episodes/{diagnosis.episode_id}/?at={diagnosis.step_index}#diagnoses")
    context = {"diagnosis": diagnosis, "episode": diagnosis.episode, "categories": CATEGORIES, "form": form, "errors": errors}
    return page(request, "console/diagnosis_edit.html", context, status=400 if errors else 200)
