from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.projects.services import project_concurrency_set


class Command(BaseCommand):
    help = "Show or set how many rollouts and imports of a project may run at once across all workers (lab/claims.py)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("project", help="project slug")
        parser.add_argument("limit", nargs="?", help="an integer, or 'default' for PRACTICUM_PROJECT_CONCURRENCY; omit to show")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"], option="project")
        raw = options["limit"]
        if raw is not None:
            try:
                limit = None if raw == "default" else int(raw)
            except ValueError:
                raise CommandError(f"limit={raw!r} is not an integer or 'default'") from None
            try:
                project_concurrency_set(project=project, limit=limit)
            except DomainError as exc:
                raise CommandError(exc.message) from exc
        own = project.max_concurrent_jobs
        shown = f"{own} (its own)" if own else f"{settings.PRACTICUM_PROJECT_CONCURRENCY} (PRACTICUM_PROJECT_CONCURRENCY)"
        self.stdout.write(f"{project.slug}: at most {shown} jobs at once")
