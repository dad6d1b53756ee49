"""manage.py coach_episodes: write coaching notes on stored episodes' user turns (lab.diagnoses.coaching).

manage.py coach_episodes --project acme --coach rule-coach                    # every finished episode with a user
manage.py coach_episodes --project acme --coach qwen-coach --episodes 12,13   # an agent config (an LLM, role coach)
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from lab.diagnoses.coaching import episode_coach
from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.trajectories.selectors import episode_list_to_coach


class Command(BaseCommand):
    help = "Write coaching notes on the user turns of stored episodes with a scripted coach or an agent of the project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--coach", required=True, help="rule-coach, or the name of an agent config of the project")
        parser.add_argument("--episodes", help="comma-separated episode ids (default: every finished episode with a user turn)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"])
        ids: list[int] | None = None
        if options["episodes"]:
            try:
                ids = [int(x) for x in options["episodes"].split(",") if x.strip()]
            except ValueError:
                raise CommandError(f"--episodes must be comma-separated ids, got {options['episodes']!r}") from None
        total = 0
        chosen = episode_list_to_coach(project=project, ids=ids)
        if not chosen:
            raise CommandError("no finished episodes match")
        for episode in tqdm(chosen, desc="coaching", disable=None):
            try:
                total += len(episode_coach(episode=episode, coach=options["coach"]))
            except DomainError as exc:
                raise CommandError(exc.message) from None
        self.stdout.write(f"{total} notes on {len(chosen)} episodes")
