from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from lab.projects.cli import command_user
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
            owner = command_user(options["owner"], option="--owner")
        project = project_create(name=options["name"], slug=options["slug"], owner=owner)
        self.stdout.write(f"project {project.slug} (id {project.pk})")
