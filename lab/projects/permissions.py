"""Who may do what, by role. Objects of projects a caller cannot see answer 404 (selectors), not 403."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from rest_framework.request import Request

from lab.errors import DomainError, Forbidden, NotFound
from lab.projects.models import ANNOTATE_ROLES, WRITE_ROLES, ApiKey, Project
from lab.projects.selectors import project_list_for, role_in


def api_key_of(request: Request) -> ApiKey | None:
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, ApiKey) else None


def visible_projects(request: Request) -> Any:
    return project_list_for(user=request.user, api_key=api_key_of(request))


def require_role(*, request: Request, project: Project, roles: frozenset[str], action: str) -> str:
    role = role_in(user=request.user, project=project)
    key = api_key_of(request)
    # What project_list_for would answer, without its query: members see their projects, a key only its own.
    if role is None or (key is not None and key.project_id != project.pk):
        raise NotFound("not_found", "No such project.")
    if role not in roles:
        raise Forbidden("forbidden", f"A {role} may not {action}; ask a project owner for a higher role.")
    return role


class _InProject(Protocol):
    @property
    def project(self) -> Project: ...


_Row = TypeVar("_Row", bound=_InProject)


def writable(request: Request, row: _Row, *, action: str, roles: frozenset[str] = WRITE_ROLES) -> _Row:
    """`row` (a run, a loop, an evaluation, a job: anything in a project) once the caller may `action` in its project."""
    require_role(request=request, project=row.project, roles=roles, action=action)
    return row


def write_project(request: Request, slug: str | None = None, *, roles: frozenset[str] = WRITE_ROLES, action: str = "write") -> Project:
    """The project a write goes to: the key's project, else the `project` named in the request, else the
    caller's only project."""
    projects = visible_projects(request)
    key = api_key_of(request)
    if key is not None:
        project = key.project
        if slug and slug not in (project.slug, str(project.pk)):
            raise NotFound("not_found", f"No project {slug!r} that this key can reach.")
    elif slug:
        lookup = {"pk": int(slug)} if str(slug).isdigit() else {"slug": slug}
        found = projects.filter(**lookup).first()
        if found is None:
            raise NotFound("not_found", f"No project {slug!r} that you can see.")
        project = found
    else:
        candidates = list(projects[:2])
        if len(candidates) != 1:
            raise DomainError("project_required", "Name the project: add `project=<slug>` to the request.")
        project = candidates[0]
    require_role(request=request, project=project, roles=roles, action=action)
    return project


__all__ = ["ANNOTATE_ROLES", "WRITE_ROLES", "api_key_of", "require_role", "visible_projects", "writable", "write_project"]
