"""Improvement loops: the list, a loop's page (the whole chain with live progress and lineage links, the report,
the promote button for owners and researchers), promoting its checkpoint, resuming a failed loop and cancelling a
queued or running one.

The page refreshes its status fragment while the loop runs (htmx polling, and at once on each event of the
loop's live stream "loop:<id>", static/js/loop.js). Promote and resume answer htmx with the fragment and a plain
form post with a redirect to the page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from lab.console.views.launch_forms import JobPage, job_post
from lab.improve.selectors import loop_get, loop_lineage, loop_list
from lab.improve.services import loop_cancel, loop_promote, loop_resume, loop_stream
from lab.live.services import live_last_seq
from lab.pages import console_view, page, role_of, visible_projects
from lab.projects.models import WRITE_ROLES
from lab.runs.selectors import checkpoint_map

LINKS = {"evaluation": "evaluation", "episode": "episode", "diagnosis_job": "diagnosis-job", "run": "run", "agent": ""}


@console_view
def loop_list_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/loops.html", {"loops": loop_list(projects=visible_projects(request))[:200]})


def loop_detail_context(request: HttpRequest, loop: Any) -> dict[str, Any]:
    live = loop.status in ("queued", "running")
    run = loop.run
    checkpoints = checkpoint_map(pks=[int(k) for k in loop.dev_evaluations])
    candidates = loop.stages.get("checkpoint", {}).get("candidates") or []
    for row in candidates:
        row["chosen"] = row["checkpoint"] == loop.checkpoint_id
        row["path"] = getattr(checkpoints.get(row["checkpoint"]), "path", "")
    report = loop.report or {}
    metrics = report.get("metrics") or []
    report_rows = [
        {
            "name": name,
            "baseline": report["baseline"]["means"].get(name),
            "candidate": report["candidate"]["means"].get(name),
            "diff": report["overall"][name],
        }
        for name in metrics
    ]
    task_rows = [{"task": row["task"], "diffs": [row["diffs"].get(name) or {} for name in metrics]} for row in report.get("per_task") or []]
    dataset = loop.dataset
    sources = [{"name": name, "weight": dataset.sources.get(name), **counts} for name, counts in dataset.counts.items()] if dataset else []
    return {
        "report_rows": report_rows,
        "task_rows": task_rows,
        "dataset_sources": sources,
        "loop": loop,
        "chain": loop_lineage(loop),
        "live": live,
        "run": run,
        "dataset": dataset,
        "report": report,
        "candidates": candidates,
        "may_write": role_of(request, loop.project_id) in WRITE_ROLES,
        "last_seq": live_last_seq(stream=loop_stream(loop)) if live else 0,
    }


LOOP_PAGE = JobPage("console/_loop_status.html", loop_detail_context, "loop")  # where a POST on a loop answers


@console_view
def loop_detail(request: HttpRequest, pk: int) -> HttpResponse:
    loop = loop_get(projects=visible_projects(request), pk=pk)
    return page(request, "console/loop_detail.html", loop_detail_context(request, loop), fragment="console/_loop_status.html")


@require_POST
@console_view
def loop_promote_view(request: HttpRequest, pk: int) -> HttpResponse:
    return job_post(
        request,
        pk,
        get=loop_get,
        action="promote checkpoints",
        act=lambda loop: loop_promote(loop=loop, user=request.user),
        answer=LOOP_PAGE,
    )


@require_POST
@console_view
def loop_resume_view(request: HttpRequest, pk: int) -> HttpResponse:
    return job_post(request, pk, get=loop_get, action="resume improvement loops", act=lambda loop: loop_resume(loop=loop), answer=LOOP_PAGE)


@require_POST
@console_view
def loop_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    return job_post(request, pk, get=loop_get, action="cancel improvement loops", act=lambda loop: loop_cancel(loop=loop), answer=LOOP_PAGE)
