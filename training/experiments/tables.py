"""README tables made from an experiment's committed result files (training/experiments/results.py says what the
files hold), and the `report` command that writes or checks them.

    python -m training.experiments report             # every experiment with result files -> its README section
    python -m training.experiments report --check     # exit 1 naming each table that differs from its files

Which files make a table: those of the experiment's current definition (`definition_hash`) on one base, the base of
the newest file. Files of another base are counted apart under the table; files of an earlier definition are stale and
named as such; a file that cannot be read is named, and then the table is not rewritten at all (`ResultFileError`).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from training.experiments import Experiment
from training.experiments.results import (
    RESULTS,
    ROOM_HIGH,
    ROOM_LOW,
    ResultFileError,
    definition_hash,
    identity_label,
    room_verdict,
)
from training.provenance import REPO_ROOT


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


def _point_key(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True)


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
        notes.append(
            f"{len(stale)} run file(s) of an earlier definition of this experiment are stale and not in this table "
            f"({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''})."
        )
    order = [_point_key(p) for p in grid_points(experiment.tuning)]
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
                dev[_point_key(r["point"])] = [e["reward"] for e in r["evaluations"]["dev"]["episodes"]]
        if dev:  # the grid order breaks ties, as the runner's max does
            ranked = sorted(dev, key=lambda key: order.index(key) if key in order else len(order))
            result.dev = [{"point": json.loads(key), "reward_mean": sum(dev[key]) / len(dev[key])} for key in ranked]
            result.chosen = max(result.dev, key=lambda d: d["reward_mean"])["point"]
        chosen = _point_key(result.chosen)
        for r in sorted(mine, key=lambda r: r["seed"]):
            test = r["evaluations"].get("test")
            if _point_key(r["point"]) != chosen or not test:
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
        used = [r for r in mine if _point_key(r["point"]) == chosen or "dev" in r["evaluations"]]
        result.runs = used
        result.wall_s = sum(r.get("train_s", 0.0) + sum(e.get("eval_s", 0.0) for e in r["evaluations"].values()) for r in used)
        if result.rewards:
            arms[arm.name] = result
    if not arms or test_seeds is None:
        return None
    seeds_per_arm = {name: len(arm.rewards) for name, arm in arms.items()}
    if len(set(seeds_per_arm.values())) > 1 or set(arms) != {a.name for a in experiment.arms}:
        missing = [a.name for a in experiment.arms if a.name not in arms]
        notes.append(
            "Partial: "
            + ", ".join(f"{n} has {k} training seed(s)" for n, k in seeds_per_arm.items())
            + (f"; no test results yet for {', '.join(missing)}" if missing else "")
            + "."
        )
    room = next((r for r in rooms if r["base"] == base and r["definition"] == current and r["test_seeds"] == test_seeds), None)
    finished = sorted(r.get("finished_at", "") for r in runs)
    result = ExperimentResult(
        experiment.name,
        base["name"],
        teacher["name"],
        False,
        str(folder.relative_to(REPO_ROOT) if folder.is_relative_to(REPO_ROOT) else folder),
        test_seeds,
        dict(experiment.shared),
        arms,
        finished[-1][:16].replace("T", " "),
        sum(a.wall_s for a in arms.values()),
        0,
        base_hash=base["hash"],
        teacher_hash=teacher["hash"],
    )
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
        return (
            f"Room check: the base scores {mean:.3f} (pass rate {float(room.get('passed_mean', 0.0)):.3f}) on the "
            f"{len(room['test_seeds'])} test seeds, inside [{ROOM_LOW}, {ROOM_HIGH}]: the arms have room to move."
        )
    return (
        f"**No room: the base scores {mean:.3f} on the {len(room['test_seeds'])} test seeds, outside [{ROOM_LOW}, {ROOM_HIGH}]. "
        "This table is not evidence for or against the method** (run with --no-room-check)."
    )


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
    return (
        f"| {experiment.name} | {experiment.method} − {strongest} | {paired.mean:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}] "
        f"{verdict} | {n} | {base} | {room} | {len(table.notes)} note(s) |"
    )


def summary_markdown(experiments: list[Experiment], results: Path = RESULTS) -> str:
    """The README's one-row-per-experiment table, from the files (experiments without files are listed as such)."""
    rows, waiting = [], []
    for experiment in sorted(experiments, key=lambda e: e.name):  # the registry's order is the modules' import order
        table = result_from_files(experiment, results / experiment.name) if (results / experiment.name).is_dir() else None
        if table is None:
            waiting.append(experiment.name)
        else:
            rows.append(headline(experiment, table))
    lines = [
        "Headlines from the committed result files (`python -m training.experiments report`): the method minus its strongest",
        "baseline on the same (training seed, test seed) cells, 95% bootstrap interval, n = training seeds × test seeds.",
        "",
        "| experiment | method − strongest baseline | effect [95% CI] | n | base | room (base's test reward) | notes |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    if not rows:
        lines.append("| (none yet) | | | | | | |")
    checked = [(name, room) for name in waiting for room in current_rooms(experiments, name, results)]
    if checked:
        lines += [
            "",
            "Room checks without runs yet (`python -m training.experiments room NAME --base BASE`: the base played greedily on the "
            f"test seeds; outside [{ROOM_LOW}, {ROOM_HIGH}] a comparison would not be evidence):",
            "",
            "| experiment | base | test task | n | base's mean reward | verdict |",
            "| --- | --- | --- | --- | --- | --- |",
            *(
                f"| {name} | {identity_label(room['base'])} | {room['task']} | {len(room['test_seeds'])} | "
                f"{room['reward_mean']:.3f} | {room_verdict(room['reward_mean'])} |"
                for name, room in checked
            ),
        ]
    if waiting:
        lines += [
            "",
            "No result files yet (their tables below, where there are any, were written before results were kept as "
            f"files, most on base-small): {', '.join(waiting)}.",
        ]
    return "\n".join(lines) + "\n"


def current_rooms(experiments: list[Experiment], name: str, results: Path) -> list[dict[str, Any]]:
    """The readable room files of experiment `name` made under its current definition, one per base, by base name."""
    experiment = next(e for e in experiments if e.name == name)
    rooms = []
    for path in sorted((results / name).glob("room-*.json")) if (results / name).is_dir() else []:
        try:
            room = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # `report` names unreadable files; the summary lists what it can read
        if isinstance(room, dict) and room.get("definition") == definition_hash(experiment) and "reward_mean" in room:
            rooms.append(room)
    return sorted(rooms, key=lambda r: identity_label(r.get("base") or {}))


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
                print(
                    f"{experiment.name}: the table in {experiment.readme} differs from its result files; run "
                    "`python -m training.experiments report`",
                    file=out,
                )
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
