"""Creating projects, members and keys. Used by the management commands, the admin and the tests."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from lab.errors import DomainError
from lab.projects.models import MAX_PROJECT_CONCURRENCY, ApiKey, Membership, Project, Role


def project_create(*, name: str, slug: str = "", description: str = "", owner: Any = None) -> Project:
    slug = slug or slugify(name)
    if not slug:
        raise DomainError("invalid_slug", f"Cannot derive a slug from the name {name!r}; give one.")
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name, "description": description})
        if owner is not None:
            membership_set(project=project, user=owner, role=Role.OWNER)
    return project


def membership_set(*, project: Project, user: Any, role: str) -> Membership:
    if role not in Role.values:
        raise DomainError("invalid_role", f"Role {role!r} is not one of {', '.join(Role.values)}.")
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def user_get_or_create(*, username: str, email: str = "", password: str | None = None) -> Any:
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if created or password:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save()
    return user


def api_key_issue(*, project: Project, user: Any, name: str, external: bool = False) -> tuple[ApiKey, str]:
    """A new key for `user` in `project`. The raw key is returned once and never stored.

    `external`: the operator's word that the key belongs to an outside harness or trainer it trusts to report
    episodes; they are stored in the external tier rather than as uploads. Only the operator's command sets it.
    """
    if not Membership.objects.filter(project=project, user=user).exists():
        raise DomainError("not_a_member", f"{user} is not a member of {project.slug}; add them first.")
    return ApiKey.issue(project=project, user=user, name=name, external=external)


def project_concurrency_set(*, project: Project, limit: int | None) -> Project:
    """The operator's per-project override of PRACTICUM_PROJECT_CONCURRENCY (None: back to the default). Not a project
    owner's setting: a project's share of the workers is decided by whoever runs them (manage.py project_concurrency)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PROJECT_CONCURRENCY):
        raise DomainError(
            "invalid_concurrency", f"max_concurrent_jobs={limit!r}: give an integer from 1 to {MAX_PROJECT_CONCURRENCY}, or none"
        )
    project.max_concurrent_jobs = limit
    project.save(update_fields=["max_concurrent_jobs"])
    return project
