"""Which projects a caller may see, and in which role. Every other selector starts from here."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from lab.errors import NotFound
from lab.projects.models import ApiKey, Membership, Project

M = TypeVar("M", bound=Model)


def project_list_for(*, user: Any, api_key: ApiKey | None = None) -> QuerySet[Project]:
    """Projects visible to a caller. A key sees its own project only, and only if its user is still a member."""
    if user is None or not user.is_authenticated:
        return Project.objects.none()
    projects = Project.objects.filter(memberships__user=user)
    if api_key is not None:
        projects = projects.filter(pk=api_key.project_id)
    return projects.distinct()


def role_in(*, user: Any, project: Project | int) -> str | None:
    project_id = project if isinstance(project, int) else project.pk
    if user is None or not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, project_id=project_id).values_list("role", flat=True).first()


def project_get_for(*, user: Any, slug_or_id: str | int, api_key: ApiKey | None = None) -> Project:
    projects = project_list_for(user=user, api_key=api_key)
    lookup = {"pk": int(slug_or_id)} if str(slug_or_id).isdigit() else {"slug": slug_or_id}
    project = projects.filter(**lookup).first()
    if project is None:
        raise NotFound("not_found", f"No project {slug_or_id!r} that you can see.")
    return project


def visible_get(rows: QuerySet[M], *, pk: int, what: str) -> M:
    """The row `pk` of `rows` (already scoped to the caller's projects), else NotFound naming `what` (a 404: a row
    of a project the caller cannot see is not told apart from one that does not exist)."""
    row = rows.filter(pk=pk).first()
    if row is None:
        raise NotFound("not_found", f"No {what} {pk} that you can see.")
    return row
