"""manage.py export_dataset: the API's dataset export from the command line, as JSONL.

manage.py export_dataset --project acme --view role --role critic --out critic.jsonl
manage.py export_dataset --project acme --format native --filter env=storebench
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.projects.selectors import project_list_all
from lab.trajectories.exports import FORMATS, VIEWS, dataset_export_lines
from lab.trajectories.selectors import FILTER_FIELDS, episode_list


class Command(BaseCommand):
    help = (
        "Export a project's episodes as JSONL: conversations (view episode), one role's turns (view role --role critic), "
        "coaching notes (view coach) or world-model transitions (view worldmodel)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--view", default="episode", choices=VIEWS)
        parser.add_argument("--role", default="", help="with --view role: critic, consultant, user, a workflow role")
        parser.add_argument("--format", default="openai", choices=FORMATS, help="with --view episode")
        parser.add_argument("--filter", action="append", default=[], metavar="FIELD=VALUE", help=f"any of {', '.join(FILTER_FIELDS)}")
        parser.add_argument("--out", default="-", help="file to write (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"])
        filters: dict[str, Any] = {}
        for item in options["filter"]:
            field, _, value = item.partition("=")
            if field not in FILTER_FIELDS or field == "project":
                raise CommandError(f"--filter {item!r}: the field must be one of {', '.join(f for f in FILTER_FIELDS if f != 'project')}")
            filters[field] = value
        try:
            episodes = episode_list(projects=project_list_all(slug=project.slug), filters=filters)
            lines = dataset_export_lines(episodes=episodes, view=options["view"], fmt=options["format"], role=options["role"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        out = sys.stdout.buffer if options["out"] == "-" else open(options["out"], "wb")  # noqa: SIM115
        count = 0
        try:
            for line in lines:
                out.write(line)
                count += 1
        finally:
            if out is not sys.stdout.buffer:
                out.close()
        self.stderr.write(f"{count} line(s) written")
