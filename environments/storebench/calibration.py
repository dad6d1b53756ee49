"""Calibration: thresholds from the calibration seeds, pass rates on seeds calibration never saw.

    python -m environments calibrate storebench                            # every scenario, held-out seeds 1000-1009
    python -m environments calibrate storebench --tasks heat-wave --heldout-seeds 1000-1003 --workers 2
    python -m environments.storebench.calibration                          # only rewrite the README tables from the JSON

1. Calibration seeds (each scenario's three public seeds): every anchor plays each, and these runs alone set

    profit_floor      best normalised profit of do-nothing and random-valid, plus 0.02 (the profit component's 0)
    profit_reference  mean normalised profit of the oracle (the profit component's 1)
    pass_threshold    max(best do-nothing/random cell + 0.05, 0.8 x smart-triage's mean composite)

2. Held-out seeds (disjoint from every scenario's public seeds, checked): every anchor plays each, scored
   against step 1's references and threshold: mean composite, its 95% confidence half-width, passes k/n.
   Nothing in step 2 feeds back into step 1, so a held-out pass rate measures how thresholds generalise.

The profit component depends on the references, so composites are recomputed from each run's raw profit
and quality components after the references are known (scoring.composite_from, the same formula).
Results go to calibration.json under the engine version (see scoring.load_calibration), and both README
tables are regenerated from that file.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from environments.core import EnvError, TaskSpec
from environments.records import record_score
from environments.registry import get_task, list_tasks, make
from environments.seeds import heldout_seeds_parse
from environments.stats import ci95
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scoring import CALIBRATION_PATH, composite_from, profit_component

ANCHORS = ("do-nothing", "random-valid", "naive-restock", "smart-triage", "oracle")
DEFAULT_HELDOUT_SEEDS = tuple(range(1000, 1010))  # above every public seed (11-243), so no scenario overlaps
COMMAND = "python -m environments calibrate storebench"
README_PATH = Path(__file__).with_name("README.md")
TABLE_START, TABLE_END = "<!-- calibration:start -->", "<!-- calibration:end -->"
HELDOUT_START, HELDOUT_END = "<!-- heldout:start -->", "<!-- heldout:end -->"


def run_cell(task_id: str, seed: int, anchor: str, version: str | None = None) -> dict[str, Any]:
    """One anchor on one task and seed (on engine `version`, default the current one): the raw results calibration needs."""
    from environments.runner import make_policy, run_episode

    env = make(task_id, seed=seed, version=version)
    record = run_episode(env, make_policy(anchor, env, seed))
    score = record_score(record)
    return {
        "task": task_id,
        "seed": seed,
        "anchor": anchor,
        "termination_reason": record["header"]["termination_reason"],
        "profit": score["details"]["profit_normalised"],
        "profit_dollars": score["details"]["profit_dollars"],
        "components": score["components"],
        "steps": len(record["steps"]) - 1,
    }


def check_heldout_seeds(tasks: Sequence[TaskSpec], heldout: Sequence[int]) -> None:
    """Refuses held-out seeds that a scenario calibrates on: a pass rate on them would be no test at all."""
    if not heldout:
        raise EnvError("bad_seeds", "heldout seeds: give at least one seed, e.g. 1000-1009")
    for task in tasks:
        shared = sorted(set(heldout) & set(task.public_seeds))
        if shared:
            raise EnvError(
                "bad_seeds", f"heldout seeds {shared} are calibration (public) seeds of {task.key}; choose others, e.g. 1000-1009"
            )


def _composite(cell: dict[str, Any], floor: float, reference: float) -> float:
    if cell["termination_reason"] != "horizon_reached":
        return 0.0
    return composite_from({**cell["components"], "profit": round(profit_component(cell["profit"], floor, reference), 4)})


def thresholds_from(task: TaskSpec, cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """References, threshold and the calibration table's cells of one scenario, from its calibration-seed runs only."""
    assert all(c["seed"] in task.public_seeds for c in cells), f"{task.key}: thresholds come from calibration seeds only"
    # The floor sits just above the best idle or random store, so doing nothing scores 0 on any seed.
    floor = max(c["profit"] for c in cells if c["anchor"] in ("do-nothing", "random-valid")) + 0.02
    reference = statistics.mean(c["profit"] for c in cells if c["anchor"] == "oracle")
    reference = max(reference, floor + 0.05)  # a degenerate scenario must not divide by ~0
    scores: dict[str, list[float]] = {a: [] for a in ANCHORS}
    for c in sorted(cells, key=lambda c: task.public_seeds.index(c["seed"])):
        scores[c["anchor"]].append(_composite(c, floor, reference))
    bad = max(scores["do-nothing"] + scores["random-valid"])
    threshold = round(max(bad + 0.05, 0.8 * statistics.mean(scores["smart-triage"])), 3)
    return {
        "scenario_version": task.version,
        "split": task.split,
        "horizon": task.horizon,
        "profit_floor": round(floor, 6),
        "profit_reference": round(reference, 6),
        "pass_threshold": threshold,
        "composites": scores,
        "passes": {a: sum(s >= threshold for s in scores[a]) for a in ANCHORS},
    }


def heldout_from(entry: dict[str, Any], cells: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Held-out runs of one scenario scored against its calibrated references and threshold (never the reverse)."""
    seeds = sorted({c["seed"] for c in cells})
    composites: dict[str, list[float]] = {a: [] for a in ANCHORS}
    for c in sorted(cells, key=lambda c: c["seed"]):
        composites[c["anchor"]].append(_composite(c, entry["profit_floor"], entry["profit_reference"]))
    threshold = entry["pass_threshold"]
    return {
        "seeds": seeds,
        "composites": composites,
        "passes": {a: sum(s >= threshold for s in composites[a]) for a in ANCHORS},
        "ci95": {a: round(ci95(composites[a]), 4) for a in ANCHORS},
    }


def _progress(done: int, total: int, started: float) -> None:
    if done == total or done % max(1, total // 50) == 0:
        end = "\n" if done == total else ""
        print(f"\rcalibrate: {done}/{total} episodes, {time.perf_counter() - started:.0f} s", end=end, file=sys.stderr, flush=True)


def run_cells(
    jobs: Sequence[tuple[Any, ...]], *, workers: int, progress: Callable[[int, int, float], None] | None = _progress
) -> list[dict[str, Any]]:
    """Every (task id, seed, anchor[, engine version]) job in `workers` processes, slowest scenarios first so no worker
    idles at the end."""
    started = time.perf_counter()
    ordered = sorted(jobs, key=lambda j: -int(get_task(j[0]).spec["days"]))
    cells: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(run_cell, *job) for job in ordered]
        for future in as_completed(futures):
            cells.append(future.result())
            if progress:
                progress(len(cells), len(futures), started)
    return cells


def calibration_inputs(
    env: str, tasks: list[str] | None, heldout_seeds: Sequence[int] | str, *, what: str
) -> tuple[list[TaskSpec], list[int]]:
    """The tasks of `env` named in `tasks` (keys or ids; None: all) and the held-out seeds (a list or "1000-1009"),
    checked: SeedError on a bad seed text, EnvError on an unknown task (`what` names the kind) or a held-out seed that is public."""
    heldout = heldout_seeds_parse(heldout_seeds)
    wanted = None if tasks is None else {t if "/" in t else f"{env}/{t}" for t in tasks}
    specs = [t for t in list_tasks(env) if wanted is None or t.id in wanted]
    if unknown := sorted((wanted or set()) - {t.id for t in specs}):
        raise EnvError("unknown_task", f"tasks: no {what} {unknown[0]!r}; `python -m environments list` shows them")
    check_heldout_seeds(specs, heldout)
    return specs, heldout


def calibrate(
    *,
    workers: int = 2,
    write: bool = True,
    tasks: list[str] | None = None,
    heldout_seeds: Sequence[int] | str = DEFAULT_HELDOUT_SEEDS,
    path: Path = CALIBRATION_PATH,
    readme: Path = README_PATH,
    progress: Callable[[int, int, float], None] | None = _progress,
) -> dict[str, Any]:
    """Calibrates `tasks` (scenario keys or task ids; default all) on their public seeds and `heldout_seeds`,
    and returns {scenario key: entry}; with `write`, merges it into calibration.json and both README tables."""
    specs, heldout = calibration_inputs("storebench", tasks, heldout_seeds, what="StoreBench scenario")
    result, run = calibrate_tasks(specs, heldout, workers=workers, progress=progress)
    if write:
        engine = calibration_write(result, run=run, path=path)
        readme_write(engine, readme)
    return result


def calibrate_tasks(
    specs: Sequence[TaskSpec],
    heldout: Sequence[int],
    *,
    workers: int,
    progress: Callable[[int, int, float], None] | None = _progress,
    version: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """({task key: entry}, the run's summary): every anchor on every task's public and held-out seeds, on engine
    `version` (default the current one); thresholds from the public seeds only (thresholds_from, heldout_from)."""
    engine = () if version is None else (version,)  # run_cell's last argument, only when not the current engine
    jobs = [(t.id, seed, a, *engine) for t in specs for seed in (*t.public_seeds, *heldout) for a in ANCHORS]
    started = time.perf_counter()
    cells = run_cells(jobs, workers=workers, progress=progress)
    wall = round(time.perf_counter() - started, 1)
    result: dict[str, Any] = {}
    for task in specs:
        mine = [c for c in cells if c["task"] == task.id]
        entry = thresholds_from(task, [c for c in mine if c["seed"] in task.public_seeds])
        entry["heldout"] = heldout_from(entry, [c for c in mine if c["seed"] not in task.public_seeds])
        result[task.key] = entry
    run = {"scenarios": len(specs), "heldout_seeds": list(heldout), "episodes": len(jobs), "workers": workers, "wall_s": wall}
    return result, run


def calibration_write(
    result: dict[str, Any], *, run: dict[str, Any], path: Path, version: str = StoreBenchEnv.version, command: str = COMMAND
) -> dict[str, Any]:
    """Merges `result` into engine `version`'s section of calibration.json (default the current engine's); other
    engines' sections stay.

    A run over some scenarios replaces only theirs; each entry keeps the held-out seeds it was measured on."""
    data = json.loads(path.read_text()) if path.exists() else {}
    engines = data.get("engines", {})
    engine = engines.get(version, {})
    scenarios = {**engine.get("scenarios", {}), **result}
    engines[version] = {"last_run": run, "scenarios": dict(sorted(scenarios.items()))}
    payload = {"generated_by": command, "anchors": list(ANCHORS), "engines": dict(sorted(engines.items()))}
    path.write_text(json.dumps(payload, indent=1) + "\n")
    return dict(engines[version])


def _ordered(scenarios: dict[str, Any]) -> list[str]:
    return sorted(scenarios, key=lambda k: (scenarios[k]["split"], k))


def table_markdown(scenarios: dict[str, Any]) -> str:
    """The calibration-seed table: mean composite and passes per anchor on each scenario's public seeds."""
    head = "| scenario | split | horizon | threshold | " + " | ".join(f"{a} (mean, passes/3)" for a in ANCHORS) + " |"
    lines = [head, "|" + " --- |" * (4 + len(ANCHORS))]
    for key in _ordered(scenarios):
        s = scenarios[key]
        cells = [f"{statistics.mean(s['composites'][a]):.3f}, {s['passes'][a]}/{len(s['composites'][a])}" for a in ANCHORS]
        lines.append(f"| {key} | {s['split']} | {s['horizon']} | {s['pass_threshold']:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seed_text(seeds: Sequence[int]) -> str:
    contiguous = list(seeds) == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 2 else ", ".join(map(str, seeds))


def heldout_markdown(
    scenarios: dict[str, Any], *, env_version: str = StoreBenchEnv.version, run: dict[str, Any] | None = None, env: str = "storebench"
) -> str:
    """The held-out table: per scenario and anchor, mean composite ± 95% CI and passes k/n on unseen seeds."""
    keys = [k for k in _ordered(scenarios) if "heldout" in scenarios[k]]
    if not keys:
        return "No held-out results yet: run `" + COMMAND + "`."
    seed_sets = {tuple(scenarios[k]["heldout"]["seeds"]) for k in keys}
    if len(seed_sets) == 1:
        seeds = list(next(iter(seed_sets)))
        measured = f"held-out seeds {_seed_text(seeds)} (n = {len(seeds)} per cell)"
    else:  # scenarios calibrated by separate runs with different held-out seeds
        measured = "held-out seeds differ by scenario (n in each cell's k/n)"
    lines = [
        f"Engine `{env} {env_version}`; thresholds from each scenario's three public seeds; {measured}. "
        "Cells: mean composite ± 95% CI half-width (Student's t), passes k/n at the threshold.",
        "",
        "| scenario | split | threshold | " + " | ".join(ANCHORS) + " |",
        "|" + " --- |" * (3 + len(ANCHORS)),
    ]
    totals = {a: [0, 0] for a in ANCHORS}
    for key in keys:
        s, h = scenarios[key], scenarios[key]["heldout"]
        cells = []
        for a in ANCHORS:
            values = h["composites"][a]
            totals[a][0] += h["passes"][a]
            totals[a][1] += len(values)
            cells.append(f"{statistics.mean(values):.3f} ± {h['ci95'][a]:.3f}, {h['passes'][a]}/{len(values)}")
        lines.append(f"| {key} | {s['split']} | {s['pass_threshold']:.3f} | " + " | ".join(cells) + " |")
    rates = [f"**{k}/{n} ({k / n:.0%})**" for k, n in totals.values()]
    lines.append("| all scenarios (passes) | | | " + " | ".join(rates) + " |")
    if run:
        lines += [
            "",
            f"Last run: {run['episodes']} episodes ({run['scenarios']} scenarios x {len(ANCHORS)} anchors x (3 calibration + "
            f"{len(run['heldout_seeds'])} held-out seeds)) in {run['wall_s']:.0f} s with {run['workers']} worker processes.",
        ]
    return "\n".join(lines)


def report_markdown(result: dict[str, Any]) -> str:
    """What the CLI prints: both tables for the scenarios just calibrated."""
    return table_markdown(result) + "\n\n" + heldout_markdown(result)


def replace_block(text: str, start: str, end: str, body: str) -> str:
    assert start in text and end in text, f"README.md lost its {start} {end} markers"
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{body}\n{end}{after}"


def readme_write(engine: dict[str, Any], readme: Path = README_PATH) -> None:
    """Regenerates both README blocks from one engine section of calibration.json."""
    scenarios = engine["scenarios"]
    text = readme.read_text()
    text = replace_block(text, TABLE_START, TABLE_END, table_markdown(scenarios))
    text = replace_block(text, HELDOUT_START, HELDOUT_END, heldout_markdown(scenarios, run=engine.get("last_run")))
    readme.write_text(text)


def readme_from_json(path: Path = CALIBRATION_PATH, readme: Path = README_PATH) -> None:
    """Rewrites both README tables from calibration.json without playing anything (e.g. after a merge)."""
    data = json.loads(path.read_text())
    engine = data.get("engines", {}).get(StoreBenchEnv.version)
    if engine is None:
        raise EnvError("not_calibrated", f"calibration.json has no section for engine {StoreBenchEnv.version}; run `{COMMAND}`")
    readme_write(engine, readme)


if __name__ == "__main__":  # python -m environments.storebench.calibration
    readme_from_json()
