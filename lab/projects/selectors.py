"""Which projects a caller may see, and in which role. Every other selector starts from here."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from lab.errors import NotFound
from lab.projects.models import ApiKey, Membership, Project


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
