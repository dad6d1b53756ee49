from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from lab.errors import DomainError
from lab.projects.models import ApiKey, Project
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
        project = Project.objects.filter(slug=options["project"]).first()
        user = get_user_model().objects.filter(username=options["username"]).first()
        if project is None or user is None:
            raise CommandError("unknown project or user")
        if options["revoke"]:
            keys = ApiKey.objects.filter(project=project, user=user, prefix__startswith=options["revoke"], revoked_at__isnull=True)
            for key in keys:
                key.revoke()
            self.stdout.write(f"revoked {len(keys)} key(s)")
            return
        try:
            _, raw = api_key_issue(project=project, user=user, name=options["name"], external=options["external"])
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(raw)
