"""manage.py import_results PROJECT [EXPERIMENT ...] [--results DIR]: committed experiment result files as finished
runs of the project (lab/runs/experiment_results.py), for the console's runs list and comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.projects.cli import command_project
from lab.runs.experiment_results import experiment_runs_import


class Command(BaseCommand):
    help = "Import training/results/<experiment>/ run files as finished runs of a project (already imported ones are skipped)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("project", help="the project's slug")
        parser.add_argument("experiments", nargs="*", help="experiment names (default: every folder with run files)")
        parser.add_argument("--results", default="", help="the results folder (default: training/results)")

    def handle(self, *args: Any, **options: Any) -> None:
        from training.experiments import load_all
        from training.experiments.results import RESULTS, ResultFileError
        from training.experiments.tables import load_files

        project = command_project(options["project"], option="project", name_the_others=True)
        results = Path(options["results"] or RESULTS)
        known = set(load_all())  # training/results/ also holds the zoo's and the zero-shot table's files
        unknown = sorted(set(options["experiments"]) - known)
        if unknown:
            raise CommandError(f"unknown experiment(s) {', '.join(unknown)}; choose from {', '.join(sorted(known))}")
        names = options["experiments"] or sorted(name for name in known if (results / name).is_dir())
        total = 0
        for name in names:
            folder = results / name
            if not folder.is_dir():
                raise CommandError(f"no result folder {folder}")
            try:
                runs, _ = load_files(folder)
            except ResultFileError as exc:
                raise CommandError(f"{exc}; nothing of {name} was imported") from exc
            created, skipped = experiment_runs_import(project=project, records=[r for r in runs if r.get("experiment") == name])
            total += len(created)
            if runs:
                self.stdout.write(f"{name}: {len(created)} run(s) imported, {skipped} already there")
        self.stdout.write(f"{total} run(s) imported into {project.slug}")
