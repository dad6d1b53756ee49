"""manage.py evaluate --agent NAME --tasks storebench/eval --seeds 0,1,2 [--anchors all] [--project SLUG]

Runs an evaluation (agent × task set × seeds) with a progress bar and prints its aggregate table, the anchors'
per-task means beside the agent's. Without REDIS_URL (or with --inline) the rollouts run here, one after
another (the same service the Celery task calls); with it they go to the workers and this command follows
their progress.
`--regrade ID` re-scores a stored evaluation from its episodes; `--compare ID` pairs this one against another.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from environments import registry
from environments.core import EnvError
from environments.policies import policy_names
from environments.seeds import SeedError, seeds_parse
from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.projects.models import Project
from lab.projects.selectors import project_list_all
from lab.rollouts.evaluations import evaluation_compare, evaluation_launch, evaluation_refresh, evaluation_regrade
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_find, rollout_job_ids
from lab.rollouts.services import rollout_run


class Command(BaseCommand):
    help = "Evaluate an agent (or an anchor) on a task set × seeds and print the aggregate table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", help="An agent config's name, or an anchor's name (created on demand).")
        parser.add_argument("--tasks", default="", help="A task set (<env>/eval, <env>/dev, ...) or one task id; needed unless --regrade.")
        parser.add_argument(
            "--seeds", default="0,1,2", help="Comma-separated integers or ranges, e.g. 0,1,2 or 0-9 (at most PRACTICUM_MAX_SEEDS)."
        )
        parser.add_argument("--project", help="Project slug (default: the only project).")
        parser.add_argument("--anchors", default="", help='Anchors to evaluate first on the same tasks and seeds: "all" or a comma list.')
        parser.add_argument("--workers", action="store_true", help="Send the rollouts to Celery workers even in embedded mode.")
        parser.add_argument("--inline", action="store_true", help="Run the rollouts in this process even when workers exist.")
        parser.add_argument("--regrade", type=int, help="Re-score evaluation ID from its stored episodes and report whether it matches.")
        parser.add_argument("--compare", type=int, help="After the run, pair this evaluation against evaluation ID.")
        parser.add_argument("--json", action="store_true", help="Print the aggregate as JSON instead of a table.")

    def handle(self, *args: Any, **options: Any) -> None:
        project = self._project(options["project"])
        if options["regrade"]:
            evaluation = evaluation_find(project=project, pk=options["regrade"])
            if evaluation is None:
                raise CommandError(f"no evaluation {options['regrade']} in {project.slug}")
            result = evaluation_regrade(evaluation=evaluation)
            self.stdout.write(json.dumps({k: result[k] for k in ("matches", "mismatches")}, indent=2))
            self._table(result["aggregate"])
            return
        if not options["agent"]:
            raise CommandError("--agent is required (or --regrade ID)")
        if not options["tasks"]:
            raise CommandError("--tasks is required: a task set <env>/eval, <env>/dev, ... or one task id (python -m environments list)")
        try:
            seeds = seeds_parse(options["seeds"], maximum=settings.PRACTICUM_MAX_SEEDS)
        except SeedError as exc:
            raise CommandError(f"--seeds: {exc}") from None
        try:
            env_name = registry.task_set(options["tasks"])[0].env
        except EnvError as exc:
            raise CommandError(exc.message) from exc
        anchors = policy_names(env_name) if options["anchors"] == "all" else [a for a in options["anchors"].split(",") if a]
        try:
            for anchor in anchors:
                if anchor != options["agent"]:
                    self._run(project, anchor, options, seeds, quiet=True)
            evaluation = self._run(project, options["agent"], options, seeds, quiet=False)
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        if options["json"]:
            self.stdout.write(json.dumps({k: v for k, v in evaluation.aggregate.items() if k != "rows"}, indent=2))
        else:
            self._table(evaluation.aggregate)
        if options["compare"]:
            other = evaluation_find(project=project, pk=options["compare"])
            if other is None:
                raise CommandError(f"no evaluation {options['compare']} in {project.slug}")
            diff = evaluation_compare(a=evaluation, b=other)["composite_diff"]
            self.stdout.write(f"paired vs evaluation {other.pk}: composite diff {_ci(diff)} over {diff['n']} pairs")

    def _project(self, slug: str | None) -> Project:
        if slug:
            return command_project(slug)
        projects = list(project_list_all()[:2])
        if len(projects) != 1:
            raise CommandError("name the project with --project SLUG")
        return projects[0]

    def _run(self, project: Project, name: str, options: dict[str, Any], seeds: list[int], *, quiet: bool) -> Evaluation:
        inline = options["inline"] or (settings.CELERY_EMBEDDED and not options["workers"])
        if options["workers"] and settings.CELERY_EMBEDDED:
            from lab.celery import start_embedded_worker

            start_embedded_worker()
        evaluation = evaluation_launch(project=project, agent=name, task_set=options["tasks"], seeds=seeds, enqueue=not inline)
        jobs = rollout_job_ids(evaluation=evaluation)
        # tqdm writes carriage returns itself, so it gets the raw stream: Django's wrapper would add newlines.
        bar_format = "{desc} |{bar:30}| {n_fmt}/{total_fmt} rollouts [{elapsed}<{remaining}]"
        with tqdm(total=len(jobs), desc=f"{name:<16.16}", bar_format=bar_format, file=self.stderr._out, ascii=True) as bar:
            if inline:
                for job_id in jobs:
                    rollout_run(job_id=job_id)
                    bar.update(1)
            else:
                while True:
                    evaluation = evaluation_refresh(evaluation_id=evaluation.pk)
                    bar.update(round(evaluation.progress * len(jobs)) - bar.n)
                    if evaluation.status in ("finished", "cancelled", "failed"):
                        break
                    time.sleep(0.5)
        evaluation.refresh_from_db()
        if not quiet:
            self.stdout.write(f"evaluation {evaluation.pk}: {evaluation.agent.name} on {evaluation.task_set}, seeds {seeds}")
        return evaluation

    def _table(self, aggregate: dict[str, Any]) -> None:
        anchors = sorted(aggregate.get("anchors") or {})
        head = f"{'task':<22} {'n':>3} {'composite [95% CI]':>24} {'pass':>6}" + "".join(f" {a[:14]:>14}" for a in anchors)
        self.stdout.write(head)
        self.stdout.write("-" * len(head))
        for row in aggregate["per_task"]:
            cells = "".join(f" {_num(row.get('anchors', {}).get(a)):>14}" for a in anchors)
            self.stdout.write(f"{row['task']:<22} {row['n']:>3} {_ci(row['composite']):>24} {row['pass_rate']:>6.2f}{cells}")
        overall = "".join(f" {_num((aggregate.get('anchors') or {})[a]['composite']):>14}" for a in anchors)
        self.stdout.write("-" * len(head))
        self.stdout.write(
            f"{'all':<22} {aggregate['episodes']:>3} {_ci(aggregate['composite']):>24} {_num(aggregate['pass_rate']):>6}{overall}"
        )
        ks = ", ".join(f"pass^{k} {_num(v)}" for k, v in aggregate["pass_hat_k"].items())
        self.stdout.write(f"{ks}; endings {aggregate['termination_reasons']}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: dict[str, Any]) -> str:
    if ci["mean"] is None:
        return "-"
    if ci["low"] is None:
        return f"{ci['mean']:.3f}"
    return f"{ci['mean']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]"
