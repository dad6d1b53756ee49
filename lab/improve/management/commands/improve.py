"""manage.py improve: take an agent around the improvement loop from the command line, with progress.

    manage.py improve start --project acme --evaluation 12 --test-seeds 20,21 [--dev-seeds 10,11] [--episodes 3,5]
        [--diagnoser rule:expert | anchor:NAME | model:NAME] [--weights recovery=2,successes=1,anchors=0.5]
        [--recipe sft|grpo|self_distill] [--recipe-config '{"max_steps": 50}'] [--base-model PATH] [--queue]
    manage.py improve run 7          # resume loop 7 at its stage (after a restart or a failure), in this process
    manage.py improve show 7         # the chain (lineage) and the report
    manage.py improve promote 7      # the chosen checkpoint as a new agent config
    manage.py improve cancel 7       # a queued or running loop (its worker stops at its next step)

`start` runs the loop in this process (the same service as the Celery task) unless --queue hands it to the workers.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from environments.seeds import SeedError, seeds_parse
from lab.errors import DomainError
from lab.improve.models import ImprovementLoop
from lab.improve.selectors import loop_lineage
from lab.improve.services import loop_cancel, loop_create, loop_promote, loop_run
from lab.projects.cli import command_project
from lab.rollouts.selectors import evaluation_find


def _seeds(raw: str, flag: str) -> list[int]:
    try:
        return seeds_parse(raw, maximum=1000)
    except SeedError as exc:
        raise CommandError(f"{flag}: {exc}") from None


def _weights(raw: str) -> dict[str, float]:
    out = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, _, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise CommandError(f"--weights: {part!r} is not source=number") from None
    return out


class Command(BaseCommand):
    help = "Improve an agent: diagnose its failing episodes, build a dataset, train, choose a checkpoint, report, promote."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        start = sub.add_parser("start", help="create a loop from a finished evaluation and run it")
        start.add_argument("--project", required=True)
        start.add_argument("--evaluation", type=int, required=True)
        start.add_argument("--episodes", default="", help="comma-separated failing episode ids (default: all failing)")
        start.add_argument("--diagnoser", default="rule:", help="rule:ANCHOR, anchor:AGENT or model:AGENT")
        start.add_argument("--weights", default="", help="recovery=W,successes=W,anchors=W")
        start.add_argument("--anchor-seeds", default="")
        start.add_argument("--recipe", default="sft")
        start.add_argument("--recipe-config", default="{}", help="JSON object of recipe fields")
        start.add_argument("--base-model", default="")
        start.add_argument("--dev-seeds", default="")
        start.add_argument("--test-seeds", required=True)
        start.add_argument("--name", default="")
        start.add_argument("--queue", action="store_true", help="hand the loop to the Celery workers instead of running it here")
        for name in ("run", "show", "promote", "cancel"):
            sub.add_parser(name).add_argument("loop", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None

    def _loop(self, pk: int) -> ImprovementLoop:
        loop = ImprovementLoop.objects.filter(pk=pk).first()
        if loop is None:
            raise CommandError(f"no improvement loop {pk}")
        return loop

    def _start(self, options: dict[str, Any]) -> None:
        project = command_project(options["project"])
        evaluation = evaluation_find(project=project, pk=options["evaluation"])
        if evaluation is None:
            raise CommandError(f"no evaluation {options['evaluation']} in project {project.slug}")
        kind, _, name = options["diagnoser"].partition(":")
        try:
            recipe_config = json.loads(options["recipe_config"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--recipe-config is not JSON: {exc}") from None
        config: dict[str, Any] = {
            "diagnoser": {"kind": kind, "name": name},
            "recipe": options["recipe"],
            "recipe_config": recipe_config,
            "test_seeds": _seeds(options["test_seeds"], "--test-seeds"),
        }
        for flag, key in (("dev_seeds", "dev_seeds"), ("anchor_seeds", "anchor_seeds")):
            if options[flag]:
                config[key] = _seeds(options[flag], f"--{flag.replace('_', '-')}")
        if options["weights"]:
            config["sources"] = _weights(options["weights"])
        if options["base_model"]:
            config["base_model"] = options["base_model"]
        try:
            episodes = [int(x) for x in options["episodes"].split(",") if x.strip()] or None
        except ValueError:
            raise CommandError(f"--episodes must be comma-separated ids, got {options['episodes']!r}") from None
        loop = loop_create(
            project=project, evaluation=evaluation, config=config, episode_ids=episodes, name=options["name"], enqueue=options["queue"]
        )
        self.stdout.write(f"loop {loop.pk}: {loop.name}, {len(loop.episode_ids)} failing episodes, recipe {loop.config['recipe']}")
        if not options["queue"]:
            self._execute(loop)

    def _run(self, options: dict[str, Any]) -> None:
        self._execute(self._loop(options["loop"]))

    def _execute(self, loop: ImprovementLoop) -> None:
        bars: dict[str, tqdm] = {}

        def progress(stage: str, fraction: float, message: str) -> None:
            bar = bars.get(stage)
            if bar is None:
                for other in bars.values():
                    other.close()
                bar = bars[stage] = tqdm(total=100, desc=f"{stage:>10}", file=self.stderr._out, leave=True)
            bar.n = round(fraction * 100)
            bar.set_postfix_str(message[:60])

        loop = loop_run(loop_id=loop.pk, progress=progress)
        for bar in bars.values():
            bar.close()
        self._print(loop)
        if loop.status == "failed":
            raise CommandError(f"loop {loop.pk} failed at {loop.stage}: {loop.error}")

    def _show(self, options: dict[str, Any]) -> None:
        self._print(self._loop(options["loop"]))

    def _promote(self, options: dict[str, Any]) -> None:
        agent = loop_promote(loop=self._loop(options["loop"]))
        self.stdout.write(f"promoted: agent {agent.name} (hf, {agent.model})")

    def _cancel(self, options: dict[str, Any]) -> None:
        loop = loop_cancel(loop=self._loop(options["loop"]))
        self.stdout.write(f"loop {loop.pk} cancelled at stage {loop.stage}")

    def _print(self, loop: ImprovementLoop) -> None:
        self.stdout.write(f"loop {loop.pk} [{loop.status}] at stage {loop.stage}")
        for entry in loop_lineage(loop):
            made = ", ".join(f"{m['kind']} {m['id']}" for m in entry["made"][:6])
            self.stdout.write(f"  {entry['stage']:>10}  {entry['status']:<9} {made}")
        report = loop.report
        if report:
            self.stdout.write(f"report on {report['pairs']} test pairs ({report['candidate']['agent']} - {report['baseline']['agent']}):")
            for name in report["metrics"]:
                d = report["overall"][name]
                self.stdout.write(f"  {name:<28} {d['mean']:+.3f} {_interval(d)}")
            for row in report["per_task"]:
                d = row["diffs"].get("composite") or {}
                if d:
                    self.stdout.write(f"  {row['task']:<28} composite {d['mean']:+.3f} {_interval(d)}")


def _interval(d: dict[str, Any]) -> str:
    """A difference's 95% interval with its n; one pair has none. Reports stored before the bounded intervals
    carry only the half-width."""
    if d.get("low") is not None:
        return f"[{d['low']:+.3f}, {d['high']:+.3f}] (n={d['n']})"
    if "low" not in d and d.get("ci95"):
        return f"± {d['ci95']:.3f} (n={d['n']})"
    return f"(n={d['n']})"
