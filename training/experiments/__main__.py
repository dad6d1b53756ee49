"""python -m training.experiments list | report [NAME ...] [--check] | room NAME ... [--base P] | NAME [--smoke] [--base P] [--teacher P] [--out DIR]
[--seeds 0,1,2] [--arms a,b] [--no-readme] [--no-room-check] [--device cuda]

A full run writes one result file per training run under training/results/NAME/ (training/experiments/results.py),
first checks that the base has room on the test seeds (exit 3 when it has none), then makes its table from those
files (training/experiments/tables.py) into its README (Experiment.readme, training/README.md unless it names
another; between the experiment's markers) unless --no-readme. Rerunning the same command continues an interrupted series: runs whose file holds what the
table needs are not trained again. `report` remakes every table from the committed files; `report --check` exits 1
when a README differs from them. --smoke runs the tiny models for a few steps and writes neither files nor README.
`room` plays the base on each named experiment's test seeds and writes its room file (as a full run does first),
training nothing: where a base has room, before a series is started. Exit 2 on a bad name or a missing model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import sys
from pathlib import Path

from training.config import ConfigError
from training.experiments import DEFAULT_BASE, DEFAULT_TEACHER
from training.zoo import resolve

ROOT = Path(__file__).resolve().parents[2]


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _list() -> int:
    from training.experiments import load_all

    for experiment in load_all().values():
        arms = ", ".join(a.name + (" (method)" if a.name == experiment.method else "") for a in experiment.arms)
        print(f"{experiment.name}: {experiment.question}\n  arms: {arms}\n  needs teacher: {'yes' if experiment.needs_teacher else 'no'}")
    return 0


def _room(args: argparse.Namespace) -> int:
    """The room check of each named experiment on --base (runner.room_only); exit 3 when any has no room."""
    from training.experiments import get
    from training.experiments.results import RESULTS, room_verdict
    from training.experiments.runner import room_only

    if not args.names:
        return _fail("room: name one or more experiments (`python -m training.experiments list`)")
    try:
        experiments = [get(name) for name in args.names]
        base = resolve(args.base)
    except (ConfigError, FileNotFoundError, KeyError, ValueError) as exc:
        return _fail(str(exc))
    verdicts = []
    for experiment in experiments:
        room = room_only(
            experiment,
            base=base,
            results=RESULTS,
            command=f"python -m training.experiments room {experiment.name} --base {args.base}",
        )
        verdicts.append(room_verdict(room["reward_mean"]))
        print(
            f"{experiment.name}: {experiment.evaluation.task}, {len(room['test_seeds'])} test seeds: {room['reward_mean']:.3f} ({verdicts[-1]})"
        )
    return 0 if all(v == "room" for v in verdicts) else 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.experiments", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="an experiment name, or `list`")
    parser.add_argument("--smoke", action="store_true", help="tiny models, one seed, a few steps (<= 30 s); never writes the README")
    parser.add_argument("--base", default=DEFAULT_BASE, help=f"zoo name or folder of the start checkpoint (default {DEFAULT_BASE})")
    parser.add_argument("--teacher", default=DEFAULT_TEACHER, help=f"zoo name or folder of the teacher (default {DEFAULT_TEACHER})")
    parser.add_argument("--out", default="", help="run folder (default var/experiments/NAME, or NAME-smoke)")
    parser.add_argument("--seeds", default="", help="training seeds, comma-separated (default: the experiment's)")
    parser.add_argument("--arms", default="", help="arms to run, comma-separated (default: all)")
    parser.add_argument("--no-readme", action="store_true", help="do not write the table into the experiment's README")
    parser.add_argument("--device", default="auto", help="where the recipes train: auto, cpu, cuda or cuda:N (not part of a run's hash)")
    parser.add_argument("--no-room-check", action="store_true", help="run even when the base leaves the arms no room (not evidence)")
    parser.add_argument("--check", action="store_true", help="with `report`: compare the READMEs with the files, write nothing")
    parser.add_argument("names", nargs="*", help=argparse.SUPPRESS)  # `report`'s experiments
    args = parser.parse_args(argv)
    if args.name == "list":
        return _list()
    if args.name == "report":
        from training.experiments import get
        from training.experiments.tables import report

        try:
            return report([get(name) for name in args.names] if args.names else None, check=args.check)
        except ConfigError as exc:
            return _fail(str(exc))
    if args.name == "room":
        return _room(args)
    if args.names:
        return _fail(f"unexpected argument(s) {' '.join(args.names)}")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", args.device):
        return _fail(f"--device={args.device!r}: give auto, cpu, cuda or cuda:N")

    from training.experiments import get
    from training.experiments.report import experiment_markdown, write_readme_section
    from training.experiments.results import RESULTS, NoRoom
    from training.experiments.runner import run_experiment
    from training.experiments.tables import table_markdown

    try:
        experiment = get(args.name)
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc) if isinstance(exc, ConfigError) else f"--seeds={args.seeds!r}: give integers separated by commas")
    arms = [a for a in args.arms.split(",") if a] or None
    unknown = sorted(set(arms or []) - {a.name for a in experiment.arms})
    if unknown:
        return _fail(
            f"--arms: unknown arm(s) {', '.join(unknown)} of {experiment.name}; choose from {', '.join(a.name for a in experiment.arms)}"
        )
    if args.smoke:
        from training.tiny import tiny_model_path

        base, teacher = tiny_model_path(0), tiny_model_path(1)
    else:
        try:
            base = resolve(args.base)
            teacher = resolve(args.teacher) if experiment.needs_teacher else base
        except (FileNotFoundError, KeyError, ValueError) as exc:
            return _fail(str(exc))
    out = Path(args.out or f"var/experiments/{experiment.name}{'-smoke' if args.smoke else ''}")
    command = "python -m training.experiments " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        result = run_experiment(
            experiment,
            base=base,
            teacher=teacher,
            out=out,
            smoke=args.smoke,
            seeds=seeds,
            arms=arms,
            results=None if args.smoke else RESULTS,
            command=command,
            room_check=not args.no_room_check,
            device=args.device,
        )
    except NoRoom as exc:
        print(f"no room: {exc}", file=sys.stderr)
        return 3
    # a full run's table is the one its files make (all the files so far, also other calls' arms and seeds)
    text = (None if args.smoke else table_markdown(experiment, RESULTS / experiment.name)) or experiment_markdown(
        experiment, result, command=command
    )
    print(text)
    (out / "report.md").write_text(text)
    (out / "experiment.json").write_text(json.dumps(dataclasses.asdict(result), indent=1))  # this call's result, as it ran
    if not args.smoke and not args.no_readme:
        readme = ROOT / experiment.readme
        write_readme_section(readme, experiment.name, text)
        print(f"wrote the {experiment.name} section of {readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
