"""What the manage.py commands share: the project or user an option names, else a CommandError that names the
option and the value it was given (the commands are an edge: STYLE rule 5)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from lab.projects.models import Project
from lab.projects.selectors import project_find, project_slugs, user_find


def command_project(slug: str, *, option: str = "--project", name_the_others: bool = False) -> Project:
    """The project `slug`; `name_the_others` lists the projects there are in the refusal."""
    project = project_find(slug=slug)
    if project is None:
        others = f"; the projects are: {', '.join(project_slugs())}" if name_the_others else ""
        raise CommandError(f"{option}: no project {slug!r}{others}")
    return project


def command_user(username: str, *, option: str = "--user") -> Any:
    """The user `username`."""
    user = user_find(username=username)
    if user is None:
        raise CommandError(f"{option}: no user {username!r}")
    return user
