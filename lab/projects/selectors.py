"""Which projects a caller may see, and in which role. Every other selector starts from here."""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth import get_user_model
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


def project_find(*, slug: str) -> Project | None:
    """The project `slug`, or None: for operators (manage.py), who see every project; callers scope with
    project_list_for."""
    return Project.objects.filter(slug=slug).first()


def project_list_all(*, slug: str = "") -> QuerySet[Project]:
    """Every project (an operator's view, for manage.py), or only the one `slug` when it is given."""
    return Project.objects.filter(slug=slug) if slug else Project.objects.all()


def project_slugs() -> list[str]:
    return list(Project.objects.values_list("slug", flat=True))


def user_find(*, username: str) -> Any:
    """The user `username`, or None."""
    return get_user_model().objects.filter(username=username).first()


def api_key_list_active(*, project: Project, user: Any, prefix: str = "") -> QuerySet[ApiKey]:
    """The user's keys in the project that are not revoked, those whose prefix starts with `prefix`."""
    return ApiKey.objects.filter(project=project, user=user, prefix__startswith=prefix, revoked_at__isnull=True)


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
