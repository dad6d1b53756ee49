"""Uploads from the console: a file dragged (or chosen) onto the upload page becomes an import job, as through the API.

The page posts to the same service the API's `POST /api/v1/episodes/import/` calls (lab.trajectories.imports:
the byte budget, `import_job_create` with its importers and expansion budgets, the job), so a file refused here
is refused there with the same code and message. Only owners and researchers (WRITE_ROLES) see the form and may
post it, as in the API. With JavaScript, static/js/console.js sends the form by XHR to show the upload's progress and
swaps in the answer's fragment; without it the form posts and the browser goes to the job's page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.console.views.launch_forms import launch_project
from lab.errors import DomainError
from lab.jobs import JobStatus
from lab.pages import console_view, is_htmx, page, visible_projects, write_projects
from lab.trajectories import imports
from lab.trajectories.models import ImportJob
from lab.trajectories.selectors import episode_list_by_pk, import_job_get, import_job_list

EPISODES_SHOWN = 100


def upload_context(request: HttpRequest, *, form: Any = None, error: DomainError | None = None) -> dict[str, Any]:
    """The form (for owners and researchers), the refusal of the last post if any (its code, status and message as the
    API answers them), and the recent imports of the user's projects."""
    jobs = import_job_list(projects=visible_projects(request))[:20]
    return {"launch_projects": write_projects(request), "formats": imports.FORMATS, "form": form or {}, "error": error, "jobs": jobs}


@console_view
def upload_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/upload.html", upload_context(request))


@require_POST
@console_view
def upload_new(request: HttpRequest) -> HttpResponse:
    """Store the file as an import job (refused files answer their API status with the message beside the form)."""
    try:
        imports.upload_size_check(int(request.META.get("CONTENT_LENGTH") or 0), what="upload")
        project = launch_project(request, "upload episodes")
        upload = request.FILES.get("file")
        if upload is None:
            raise DomainError("file_required", "choose a file to upload (or drag one onto the page)", path="file")
        imports.upload_size_check(upload.size or 0)
        fmt = request.POST.get("format", "").strip() or "auto"
        job = imports.import_job_create(
            project=project,
            user=request.user,
            filename=upload.name or "upload",
            data=upload.read(),
            fmt=fmt,
            provenance=imports.upload_provenance(None),
        )
    except DomainError as exc:
        if exc.status in (403, 404) and exc.code in ("forbidden", "not_found"):
            raise  # not the form's fault: the error page, as for the other launch forms
        context = upload_context(request, form=request.POST, error=exc)
        return page(request, "console/upload.html", context, fragment="console/_upload_result.html", status=exc.status)
    if is_htmx(request):
        return page(request, "console/upload.html", import_context(job), fragment="console/_upload_result.html", status=202)
    return redirect("upload", pk=job.pk)


def import_context(job: ImportJob) -> dict[str, Any]:
    ids = list(job.episode_ids or [])
    episodes = episode_list_by_pk(pks=ids[:EPISODES_SHOWN])
    return {
        "job": job,
        "episodes": episodes,
        "more_episodes": max(0, len(ids) - EPISODES_SHOWN),
        "live": job.status in (JobStatus.QUEUED, JobStatus.RUNNING),
    }


@console_view
def upload_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = import_job_get(projects=visible_projects(request), pk=pk)
    return page(request, "console/upload_detail.html", import_context(job), fragment="console/_import_status.html")
