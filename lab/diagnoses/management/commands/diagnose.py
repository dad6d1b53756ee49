"""manage.py diagnose: diagnose, label and verify failed episodes in one job, with a progress bar.

    manage.py diagnose --project acme --failed --agent qwen-diagnoser --verify --pivotal smart-triage
    manage.py diagnose --project acme --episodes 12,13,14 --rule smart-triage --verify --export out.jsonl --view recovery

Runs the same service as the Celery job (lab.diagnoses.jobs) in this process and prints the summary table.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from lab.diagnoses.exports import VIEWS, diagnoses_export_lines
from lab.diagnoses.jobs import diagnosis_job_launch, diagnosis_job_run
from lab.diagnoses.selectors import diagnosis_job_diagnoses
from lab.errors import DomainError
from lab.projects.cli import command_project
from lab.trajectories.selectors import agent_find_by_name, episode_ids_failed_finished


class Command(BaseCommand):
    help = "Diagnose failed episodes with a model or a rule, label pivotal steps, verify by replay; print per-category pass rates."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--episodes", help="comma-separated episode ids")
        which.add_argument("--failed", action="store_true", help="every finished, failed episode of the project (not branches)")
        parser.add_argument("--task", help="with --failed: only this task (env/key)")
        parser.add_argument("--limit", type=int, default=1000, help="with --failed: at most this many, newest first")
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--agent", help="agent config name of the model diagnoser")
        source.add_argument("--rule", metavar="ANCHOR", help="rule diagnoses at the pivotal step of this anchor")
        parser.add_argument("--pivotal", metavar="ANCHOR", default="", help="label pivotal steps with this anchor")
        parser.add_argument("--verify", action="store_true", help="verify each diagnosis by replay")
        parser.add_argument("--export", metavar="FILE", help="write the job's diagnoses as JSONL")
        parser.add_argument("--view", choices=VIEWS, default="diagnosis")

    def handle(self, *args: Any, **options: Any) -> None:
        project = command_project(options["project"])
        if options["episodes"]:
            try:
                ids = [int(x) for x in options["episodes"].split(",") if x.strip()]
            except ValueError:
                raise CommandError(f"--episodes must be comma-separated ids, got {options['episodes']!r}") from None
        else:
            ids = episode_ids_failed_finished(project=project, task=options["task"] or "", limit=options["limit"])
            if not ids:
                raise CommandError("no failed episodes match")
        agent = None
        if options["agent"]:
            agent = agent_find_by_name(project=project, name=options["agent"])
            if agent is None:
                raise CommandError(f"no agent {options['agent']!r} in {project.slug}")
        try:
            job = diagnosis_job_launch(
                project=project,
                episode_ids=ids,
                agent=agent,
                rule_anchor=options["rule"] or "",
                pivotal_anchor=options["pivotal"],
                verify=options["verify"],
                enqueue=False,
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        with tqdm(total=job.total, desc=f"diagnosis job {job.pk}", unit="episode", file=self.stderr) as bar:
            job = diagnosis_job_run(job_id=job.pk, progress=lambda done, total: bar.update(done - bar.n))
        self.stdout.write(self._table(job.summary))
        if options["export"]:
            diagnoses = diagnosis_job_diagnoses(job=job)
            with open(options["export"], "wb") as handle:
                count = sum(handle.write(line) > 0 for line in diagnoses_export_lines(diagnoses=diagnoses, view=options["view"]))
            self.stdout.write(f"wrote {count} {options['view']} lines to {options['export']}")

    def _table(self, summary: dict[str, Any]) -> str:
        rows = [f"{'category':<22}{'n':>5}{'verified':>10}{'refuted':>9}{'failed':>8}{'retry pass':>12}{'correction pass':>17}"]
        for category, row in summary.get("by_category", {}).items():
            rows.append(
                f"{category:<22}{row['diagnoses']:>5}{row['verified']:>10}{row['refuted']:>9}{row['failed']:>8}"
                f"{_pct(row['retry_pass_rate']):>12}{_pct(row['correction_pass_rate']):>17}"
            )
        rows.append(f"attempts: {json.dumps(summary.get('attempts', {}))}")
        for error in summary.get("errors", []):
            rows.append(f"episode {error['episode']}: {error['error']}")
        return "\n".join(rows)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"
