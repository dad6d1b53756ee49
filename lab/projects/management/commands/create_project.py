from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from lab.projects.services import project_create


class Command(BaseCommand):
    help = "Create a project (idempotent by slug), optionally with an owner."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name")
        parser.add_argument("--slug", default="")
        parser.add_argument("--owner", help="username of the owner")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = None
        if options["owner"]:
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"no user {options['owner']!r}")
        project = project_create(name=options["name"], slug=options["slug"], owner=owner)
        self.stdout.write(f"project {project.slug} (id {project.pk})")
