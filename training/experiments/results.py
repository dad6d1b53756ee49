"""An experiment's evidence as files in the repository, and its README table rebuilt from them.

    python -m training.experiments report             # every experiment with result files -> its README section
    python -m training.experiments report --check     # exit 1 naming each table that differs from its files

A full run (not --smoke) writes one JSON per training run under `training/results/<experiment>/<arm>/`, named like
its run folder (`<point>-seed<S>-<config hash>.json`): the recipe config, the seed, the base and teacher with their
hashes, the commit, the machine, the wall times and every evaluation episode. Before any arm trains, the room check
plays the base on the test seeds and writes `room-<base hash>.json` beside them: a base scoring below ROOM_LOW or above
ROOM_HIGH leaves no room to help or to hurt, and the runner stops (`--no-room-check` runs anyway; the table then says
it is not evidence).

The table is made from these files alone (`result_from_files`), never from a run's memory, so a README and its files
cannot drift apart (tests/training/test_experiment_results.py rebuilds every table). The files are the runner's resume
state across machines too: a run whose file holds what the table needs is never trained again.

Which files make a table: those of the experiment's current definition (arms, shared config, evaluation, grid:
`definition_hash`) on one base, the base of the newest file. Files of another base are counted apart under the table;
files of an earlier definition are stale and named as such; a file that cannot be read is named, and then the table
is not rewritten at all (`ResultFileError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from training.experiments import Experiment
from training.provenance import REPO_ROOT, provenance, write_result

RESULTS = REPO_ROOT / "training" / "results"
ROOM_LOW, ROOM_HIGH = 0.05, 0.95
"""A base whose mean test reward lies outside [ROOM_LOW, ROOM_HIGH] leaves a comparison no room: every arm sits on
the floor or the ceiling, and a null there says nothing about the method."""


class ResultFileError(ValueError):
    """A result file that cannot be read (not JSON, or missing what a table needs): the message names the file."""


class NoRoom(RuntimeError):
    """The base leaves no room on the experiment's test seeds (module docstring)."""


def model_identity(path: str | Path) -> dict[str, str]:
    """{"name", "hash"} of a model folder: a zoo model's spec name and config hash (zoo.json), a packaged model's store
    name and conversion (manifest.json), else the folder's name and no hash. The same model has the same identity on
    every machine, whatever its folder is called there."""
    from training.model_store import read_manifest
    from training.zoo import manifest

    if not str(path):
        return {"name": "", "hash": ""}
    zoo = manifest(path)
    if zoo.get("hash"):
        return {"name": str(zoo.get("name", Path(path).name)), "hash": str(zoo["hash"])}
    store = read_manifest(Path(path))
    if store.get("name"):
        digest = hashlib.sha256(json.dumps(store.get("source"), sort_keys=True, default=str).encode()).hexdigest()[:12]
        return {"name": str(store["name"]), "hash": f"{digest}-v{store.get('conversion_version', 0)}"}
    return {"name": Path(path).name, "hash": ""}


def portable(value: Any, models: dict[str, str]) -> Any:
    """`value` with machine-specific paths replaced: a model folder by its identity ("zoo:smol-base@355f7f5f5998"), a
    path inside the repository by its relative form. What a run's config hash is taken over, and what its file keeps."""
    if isinstance(value, dict):
        return {k: portable(v, models) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [portable(v, models) for v in value]
    if isinstance(value, str | Path) and str(value):
        text = str(value)
        if text in models:
            return models[text]
        root = str(REPO_ROOT) + "/"
        if text.startswith(root):
            return text[len(root) :]
    return value


def identity_label(identity: dict[str, str]) -> str:
    return f"{identity['name']}@{identity['hash']}" if identity.get("hash") else identity.get("name", "")


def definition_hash(experiment: Experiment) -> str:
    """What decides which runs an experiment's table is made of: its arms' recipes and overrides, shared config,
    evaluation and grid (not its wording, seeds or README)."""
    payload = {
        "arms": [[a.name, a.recipe, a.overrides] for a in experiment.arms],
        "shared": experiment.shared,
        "evaluation": dataclasses.asdict(experiment.evaluation),
        "tuning": {k: list(v) for k, v in experiment.tuning.items()},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_file(results: Path, experiment: str, arm: str, run_name: str) -> Path:
    return results / experiment / arm / f"{run_name}.json"


def room_file(results: Path, experiment: str, base: dict[str, str]) -> Path:
    return results / experiment / f"room-{base['hash'] or base['name']}.json"


def write_run(path: Path, result: dict[str, Any], *, experiment: Experiment, base: dict[str, str], teacher: dict[str, str] | None,
              models: dict[str, str], command: str) -> None:  # fmt: skip
    """The run's result.json made portable, with what produced it (module docstring)."""
    write_result(path, {**portable(result, models), "experiment": experiment.name, "definition": definition_hash(experiment),
                        "base": base, "teacher": teacher, "command": command, **provenance()})  # fmt: skip


def room_verdict(reward_mean: float) -> str:
    return "room" if ROOM_LOW <= reward_mean <= ROOM_HIGH else "no room"


def load_files(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(run records, room records) of one experiment's folder, each with "file" (its path relative to the repository).
    Raises ResultFileError naming the first file that is not a readable result."""
    runs, rooms = [], []
    for path in sorted(folder.rglob("*.json")):
        name = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        try:
            record = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ResultFileError(f"{name}: not a readable JSON result ({exc})") from exc
        if not isinstance(record, dict):
            raise ResultFileError(f"{name}: not a result (a JSON object was expected)")
        is_room = path.name.startswith("room-")
        needed = (
            ("base", "definition", "test_seeds", "reward_mean")
            if is_room
            else ("arm", "point", "seed", "base", "definition", "evaluations")
        )
        missing = [key for key in needed if key not in record]
        if missing:
            raise ResultFileError(f"{name}: not a result of this runner (missing {', '.join(missing)})")
        (rooms if is_room else runs).append({**record, "file": str(name)})
    return runs, rooms


@dataclasses.dataclass
class FileTable:
    """What result_from_files made of an experiment's folder."""

    result: Any  # runner.ExperimentResult
    room: dict[str, Any] | None
    notes: list[str]  # runs apart (another base), stale files, partial arms


def result_from_files(experiment: Experiment, folder: Path) -> FileTable | None:
    """The ExperimentResult the table is made of, rebuilt from the folder's files (module docstring), or None when the
    folder holds no run of the current definition."""
    from training.experiments.runner import ArmResult, ExperimentResult, episode_measures, grid_points

    runs, rooms = load_files(folder)
    current = definition_hash(experiment)
    stale = [r["file"] for r in runs if r["definition"] != current]
    runs = [r for r in runs if r["definition"] == current]
    if not runs:
        return None
    newest = max(runs, key=lambda r: r.get("finished_at", ""))
    base, teacher = newest["base"], newest.get("teacher") or {"name": "", "hash": ""}
    apart: dict[str, int] = defaultdict(int)
    for r in runs:
        if r["base"] != base:
            apart[identity_label(r["base"])] += 1
    runs = [r for r in runs if r["base"] == base]
    notes = [f"{n} run file(s) on another base, {label}, are not in this table." for label, n in sorted(apart.items())]
    if stale:
        notes.append(f"{len(stale)} run file(s) of an earlier definition of this experiment are stale and not in this table "
                     f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}).")  # fmt: skip
    order = [json.dumps(p, sort_keys=True) for p in grid_points(experiment.tuning)]
    arms: dict[str, ArmResult] = {}
    test_seeds: list[int] | None = None
    for arm in experiment.arms:
        mine = [r for r in runs if r["arm"] == arm.name]
        if not mine:
            continue
        result = ArmResult(arm.name, chosen=json.loads(order[0]))
        dev: dict[str, list[float]] = {}
        for r in mine:
            if "dev" in r["evaluations"]:
                dev[json.dumps(r["point"], sort_keys=True)] = [e["reward"] for e in r["evaluations"]["dev"]["episodes"]]
        if dev:  # the grid order breaks ties, as the runner's max does
            ranked = sorted(dev, key=lambda key: order.index(key) if key in order else len(order))
            result.dev = [{"point": json.loads(key), "reward_mean": sum(dev[key]) / len(dev[key])} for key in ranked]
            result.chosen = max(result.dev, key=lambda d: d["reward_mean"])["point"]
        chosen = json.dumps(result.chosen, sort_keys=True)
        for r in sorted(mine, key=lambda r: r["seed"]):
            test = r["evaluations"].get("test")
            if json.dumps(r["point"], sort_keys=True) != chosen or not test:
                continue
            seeds = [e["seed"] for e in test["episodes"]]
            if test_seeds is None:
                test_seeds = seeds
            if seeds != test_seeds:
                notes.append(f"{r['file']}: evaluated on other test seeds than the table's; not in it.")
                continue
            episodes = test["episodes"]
            result.rewards[r["seed"]] = [e["reward"] for e in episodes]
            result.passed[r["seed"]] = [1.0 if e["passed"] else 0.0 for e in episodes]
            if experiment.evaluation.components:
                result.measures[r["seed"]] = episode_measures(episodes)
            if "measures" in test:
                result.measures[r["seed"]] = {**result.measures.get(r["seed"], {}), **test["measures"]}
        used = [r for r in mine if json.dumps(r["point"], sort_keys=True) == chosen or "dev" in r["evaluations"]]
        result.runs = used
        result.wall_s = sum(r.get("train_s", 0.0) + sum(e.get("eval_s", 0.0) for e in r["evaluations"].values()) for r in used)
        if result.rewards:
            arms[arm.name] = result
    if not arms or test_seeds is None:
        return None
    seeds_per_arm = {name: len(arm.rewards) for name, arm in arms.items()}
    if len(set(seeds_per_arm.values())) > 1 or set(arms) != {a.name for a in experiment.arms}:
        missing = [a.name for a in experiment.arms if a.name not in arms]
        notes.append("Partial: " + ", ".join(f"{n} has {k} training seed(s)" for n, k in seeds_per_arm.items())
                     + (f"; no test results yet for {', '.join(missing)}" if missing else "") + ".")  # fmt: skip
    room = next((r for r in rooms if r["base"] == base and r["definition"] == current and r["test_seeds"] == test_seeds), None)
    finished = sorted(r.get("finished_at", "") for r in runs)
    result = ExperimentResult(
        experiment.name, base["name"], teacher["name"], False, str(folder.relative_to(REPO_ROOT) if folder.is_relative_to(REPO_ROOT) else folder),
        test_seeds, dict(experiment.shared), arms, finished[-1][:16].replace("T", " "), sum(a.wall_s for a in arms.values()), 0,
        base_hash=base["hash"], teacher_hash=teacher["hash"],
    )  # fmt: skip
    return FileTable(result, room, notes)


def default_command(experiment: Experiment, result: Any) -> str:
    """The command that makes (or continues) the table: the runner resumes from the files, so it is also the one to rerun."""
    parts = ["python -m training.experiments", experiment.name, "--base", result.base]
    if experiment.needs_teacher:
        parts += ["--teacher", result.teacher]
    seeds = sorted(next(iter(result.arms.values())).rewards)
    if tuple(seeds) != tuple(experiment.train_seeds):
        parts += ["--seeds", ",".join(map(str, seeds))]
    return " ".join(parts)


def room_line(room: dict[str, Any] | None) -> str:
    if room is None:
        return "Room check: none on file for this base and these test seeds (a run before room checks were kept)."
    mean = float(room["reward_mean"])
    if room_verdict(mean) == "room":
        return (f"Room check: the base scores {mean:.3f} (pass rate {float(room.get('passed_mean', 0.0)):.3f}) on the "
                f"{len(room['test_seeds'])} test seeds, inside [{ROOM_LOW}, {ROOM_HIGH}]: the arms have room to move.")  # fmt: skip
    return (f"**No room: the base scores {mean:.3f} on the {len(room['test_seeds'])} test seeds, outside [{ROOM_LOW}, {ROOM_HIGH}]. "
            "This table is not evidence for or against the method** (run with --no-room-check).")  # fmt: skip


def table_markdown(experiment: Experiment, folder: Path) -> str | None:
    """The README section made from the folder's files, or None when it holds no run of the current definition."""
    from training.experiments.report import experiment_markdown

    table = result_from_files(experiment, folder)
    if table is None:
        return None
    text = experiment_markdown(experiment, table.result, command=default_command(experiment, table.result)).rstrip()
    extra = [room_line(table.room), *table.notes]
    return text + "\n\n" + "\n".join(f"- {line}" for line in extra) + "\n"


SUMMARY = "summary"  # the README block (between <!-- experiment:summary:begin/end -->) with one row per experiment


def headline(experiment: Experiment, table: FileTable) -> str:
    """One row: the method against its strongest baseline (the other arm of highest mean test reward), the paired
    difference with its 95% interval and n, the base, and the room verdict."""
    from training.experiments.standard import paired_difference, summarise

    result = table.result
    method = result.arms.get(experiment.method)
    others = {name: arm for name, arm in result.arms.items() if name != experiment.method}
    room = (
        "unchecked" if table.room is None else f"{room_verdict(float(table.room['reward_mean']))} ({float(table.room['reward_mean']):.2f})"
    )
    base = f"{result.base}@{result.base_hash}" if result.base_hash else result.base
    if method is None or not others:
        return f"| {experiment.name} | {experiment.method} | - | - | {base} | {room} | partial: no arm to compare |"
    strongest = max(others, key=lambda name: summarise(others[name].rewards).mean)
    paired = paired_difference(method.rewards, others[strongest].rewards)
    n = f"{len(method.rewards)} × {len(result.test_seeds)}"
    verdict = "gain" if paired.low > 0 else "loss" if paired.high < 0 else f"null (MDE {paired.mde:.3f})"
    return (f"| {experiment.name} | {experiment.method} − {strongest} | {paired.mean:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}] "
            f"{verdict} | {n} | {base} | {room} | {len(table.notes)} note(s) |")  # fmt: skip


def summary_markdown(experiments: list[Experiment], results: Path = RESULTS) -> str:
    """The README's one-row-per-experiment table, from the files (experiments without files are listed as such)."""
    rows, waiting = [], []
    for experiment in sorted(experiments, key=lambda e: e.name):  # the registry's order is the modules' import order
        table = result_from_files(experiment, results / experiment.name) if (results / experiment.name).is_dir() else None
        if table is None:
            waiting.append(experiment.name)
        else:
            rows.append(headline(experiment, table))
    lines = ["Headlines from the committed result files (`python -m training.experiments report`): the method minus its strongest",
             "baseline on the same (training seed, test seed) cells, 95% bootstrap interval, n = training seeds × test seeds.", "",
             "| experiment | method − strongest baseline | effect [95% CI] | n | base | room (base's test reward) | notes |",
             "| --- | --- | --- | --- | --- | --- | --- |", *rows]  # fmt: skip
    if not rows:
        lines.append("| (none yet) | | | | | | |")
    if waiting:
        lines += ["", "No result files yet (their tables below, where there are any, were written before results were kept as "
                      f"files, most on base-small): {', '.join(waiting)}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def report(experiments: list[Experiment] | None = None, *, results: Path = RESULTS, check: bool = False, out: Any = None) -> int:
    """Rewrite (or with check, compare) the README section of each experiment (default: every one with a folder under
    `results`). 0: all written or equal; 1: a table differs (check) or a folder holds an unreadable file (named, and
    its table left as it was)."""
    import sys

    from training.experiments import load_all
    from training.experiments.report import read_readme_section, write_readme_section

    out = out or sys.stdout
    everything = experiments is None
    if experiments is None:
        experiments = [e for e in load_all().values() if (results / e.name).is_dir()]
    status = 0
    for experiment in experiments:
        readme = REPO_ROOT / experiment.readme
        try:
            text = table_markdown(experiment, results / experiment.name)
        except ResultFileError as exc:
            print(f"{experiment.name}: {exc}; its table was left as it is", file=out)
            status = 1
            continue
        if text is None:
            print(f"{experiment.name}: no result files of its current definition under {results / experiment.name}", file=out)
            continue
        if check:
            if read_readme_section(readme, experiment.name) != text.rstrip():
                print(f"{experiment.name}: the table in {experiment.readme} differs from its result files; run "
                      "`python -m training.experiments report`", file=out)  # fmt: skip
                status = 1
            continue
        write_readme_section(readme, experiment.name, text)
        print(f"{experiment.name}: table written into {experiment.readme}", file=out)
    if everything:  # the one-row-per-experiment table in training/README.md
        summary, readme = summary_markdown(list(load_all().values()), results), REPO_ROOT / "training" / "README.md"
        if check and read_readme_section(readme, SUMMARY) != summary.rstrip():
            print(
                "the summary table in training/README.md differs from the result files; run `python -m training.experiments report`",
                file=out,
            )
            status = 1
        elif not check:
            write_readme_section(readme, SUMMARY, summary)
    return status
