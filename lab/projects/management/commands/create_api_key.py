from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lab.errors import DomainError
from lab.projects.cli import command_project, command_user
from lab.projects.selectors import api_key_list_active
from lab.projects.services import api_key_issue


class Command(BaseCommand):
    help = "Issue an API key for a member of a project (printed once), or revoke one with --revoke PREFIX."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("username")
        parser.add_argument("--name", default="cli")
        parser.add_argument(
            "--external", action="store_true", help="an outside harness or trainer: its episodes are stored as external, not upload"
        )
        parser.add_argument("--revoke", metavar="PREFIX", help="revoke the user's key in the project with this prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"], option="project")
        user = command_user(options["username"], option="username")
        if options["revoke"]:
            keys = api_key_list_active(project=project, user=user, prefix=options["revoke"])
            for key in keys:
                key.revoke()
            self.stdout.write(f"revoked {len(keys)} key(s)")
            return
        try:
            _, raw = api_key_issue(project=project, user=user, name=options["name"], external=options["external"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(raw)
