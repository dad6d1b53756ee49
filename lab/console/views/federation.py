"""Federations: every federation the user can see, with each finished round's metrics (utility per participant,
canaries found, leakage over chance, bytes exchanged) and its exports' gate results; polled while one runs.
Between installations: every push to a peer and what it answered, and the inbox of artifacts other installations
pushed, with accept and reject buttons for owners (a plain post returns to the page; htmx gets the section).
Launching and pushing go through the API or `manage.py federate` (lab/federation)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.errors import Forbidden
from lab.federation.exchange import received_decide
from lab.federation.selectors import federation_list_with_exports, received_get, received_list, sharing_policy_current, transfer_list
from lab.pages import console_view, is_htmx, page, role_of, visible_projects
from lab.projects.models import ADMIN_ROLES

HIDDEN = ("round", "mode", "models")


def _table(results: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    columns = [k for k in (results[0] if results else {}) if k not in HIDDEN]
    return columns, [[r["round"], *(r.get(c) for c in columns)] for r in results]


def federation_context(request: HttpRequest) -> dict[str, Any]:
    projects = visible_projects(request)
    federations = []
    for federation in federation_list_with_exports(projects=projects)[:100]:
        columns, rows = _table(federation.results)
        refused = [e for e in federation.exports.all() if e.refused]
        federations.append(
            {"object": federation, "columns": columns, "rows": rows, "exports": federation.exports.count(), "refused": refused}
        )
    policies = [(p, sharing_policy_current(project=p)) for p in projects]
    live = any(f["object"].status in ("queued", "running") for f in federations)
    return {"federations": federations, "policies": policies, "live": live, **exchange_context(request)}


def exchange_context(request: HttpRequest) -> dict[str, Any]:
    projects = visible_projects(request)
    owned = {p.pk for p in projects if role_of(request, p) in ADMIN_ROLES}
    return {"transfers": transfer_list(projects=projects)[:50], "received": received_list(projects=projects)[:100], "owned": owned}


@console_view
def federation_page(request: HttpRequest) -> HttpResponse:
    return page(request, "console/federation.html", federation_context(request), fragment="console/_federation_rows.html")


@require_POST
@console_view
def received_decide_view(request: HttpRequest, pk: int, decision: str) -> HttpResponse:
    received = received_get(projects=visible_projects(request), pk=pk)
    role = role_of(request, received.project_id)
    if role not in ADMIN_ROLES:
        raise Forbidden("forbidden", f"A {role} may not decide on received artifacts; ask a project owner.")
    received_decide(received=received, accept=decision == "accept", user=request.user)
    if is_htmx(request):
        return page(request, "console/_federation_exchange.html", exchange_context(request))
    return redirect("federation")
