from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.projects.models import Role
from lab.projects.services import membership_set, user_get_or_create


class Command(BaseCommand):
    help = "Add a user to a project with a role (creates the user if needed)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("username")
        parser.add_argument("--role", default=Role.RESEARCHER, choices=Role.values)
        parser.add_argument("--password", help="set this password (new or existing user)")
        parser.add_argument("--email", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"], option="project")
        user = user_get_or_create(username=options["username"], email=options["email"], password=options["password"])
        try:
            membership_set(project=project, user=user, role=options["role"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{user.username} is {options['role']} in {project.slug}")
