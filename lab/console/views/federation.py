"""Federations: every federation the user can see, with each finished round's metrics (utility per participant,
canaries found, leakage over chance, bytes exchanged) and its exports' gate results; polled while one runs.
Launching goes through the API or `manage.py federate` (lab/federation)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from lab.federation.selectors import federation_list, sharing_policy_current
from lab.pages import console_view, page, visible_projects

HIDDEN = ("round", "mode", "models")


def _table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    columns = [k for k in (results[0] if results else {}) if k not in HIDDEN]
    return columns, [[r["round"], *(r.get(c) for c in columns)] for r in results]


def federation_context(request: HttpRequest) -> dict[str, Any]:
    projects = visible_projects(request)
    federations = []
    for federation in federation_list(projects=projects).prefetch_related("exports__project")[:100]:
        columns, rows = _table(federation.results)
        refused = [e for e in federation.exports.all() if e.refused]
        federations.append(
            {"object": federation, "columns": columns, "rows": rows, "exports": federation.exports.count(), "refused": refused}
        )
    policies = [(p, sharing_policy_current(project=p)) for p in projects]
    live = any(f["object"].status in ("queued", "running") for f in federations)
    return {"federations": federations, "policies": policies, "live": live}


@console_view
def federation_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/federation.html", federation_context(request), fragment="console/_federation_rows.html")
