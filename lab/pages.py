"""What every server-rendered page shares (the console's and play's): project scoping, page-or-fragment rendering,
and domain errors as pages. It lives outside both apps so that neither imports the other."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

from lab.edge import form_check
from lab.errors import DomainError
from lab.projects.models import WRITE_ROLES, Project
from lab.projects.selectors import project_list_for, role_in

PageView = Callable[..., HttpResponseBase]  # a page, or a streamed download


def visible_projects(request: HttpRequest) -> QuerySet[Project]:
    return project_list_for(user=request.user)


def write_projects(request: HttpRequest) -> QuerySet[Project]:
    """Projects where this user may launch runs, evaluations and rollouts."""
    user_id = request.user.pk
    assert user_id is not None, "console_view lets only logged-in users in"
    return visible_projects(request).filter(memberships__user_id=user_id, memberships__role__in=WRITE_ROLES)


def is_htmx(request: HttpRequest) -> bool:
    # Boosted navigation wants the whole page; a targeted hx-get wants the fragment.
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not getattr(htmx, "boosted", False)


def page(request: HttpRequest, template: str, context: dict[str, Any], *, fragment: str | None = None, status: int = 200) -> HttpResponse:
    """One view serves the page and, to htmx requests, its fragment (STYLE.md, htmx)."""
    chosen = fragment if fragment and is_htmx(request) else template
    return render(request, chosen, context, status=status)


def console_view(view: PageView | None = None, *, check_form: bool = True) -> Any:
    """Login required; a DomainError raised inside becomes an error page (or fragment) with its status.

    A posted form holding a NUL character is refused (400) before the view runs. `check_form=False` is for a
    view that must first decide who may post at all (play: a stranger gets 404, not a form error); it calls
    `form_check` itself after that.
    """
    if view is None:
        return functools.partial(console_view, check_form=check_form)

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            if check_form and request.method == "POST":
                form_check(request.POST)
            return view(request, *args, **kwargs)
        except DomainError as exc:
            context = {"error": exc, "status": exc.status}
            return page(request, "console/error.html", context, fragment="console/_error.html", status=exc.status)

    return login_required(wrapped)


def role_of(request: HttpRequest, project: Project | int) -> str | None:
    return role_in(user=request.user, project=project)
