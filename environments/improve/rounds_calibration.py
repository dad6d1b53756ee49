"""Calibration of improve-rounds; rewrites rounds_calibration.json and the README's two improve-rounds tables.

    python -m environments.improve.rounds_calibration                       # ~15 s on one core
    python -m environments.improve.rounds_calibration --heldout-seeds 1000-1009

1. Calibration seeds (each task's public seeds 0-2): every anchor plays each; these runs alone set
       pass_threshold = max(best mean of do-nothing / first-try + 0.05, 0.8 x improver's mean), at most 0.95
2. Held-out seeds (default 1000-1019): every anchor's mean composite, 95% half-width (Student's t), passes k/n.
3. The improvement figures of the rounds-playing anchors on the held-out seeds (environments.improve.rounds
   improvement_metrics): rounds used, verifier gain per round, and the share of the gain in the last third.
(`python -m environments calibrate` looks for environments.<env>.calibration; this environment lives in the
improve package, hence its own entry point.)
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.core import EnvError
from environments.improve import ROUNDS_CALIBRATION_PATH
from environments.records import record_score
from environments.registry import list_tasks, make
from environments.seeds import heldout_seeds_parse
from environments.stats import ci95

ANCHORS = ("do-nothing", "first-try", "improver", "chain", "final-only", "oracle")
ROUND_ANCHORS = ("improver", "chain")
COMMAND = "python -m environments.improve.rounds_calibration"
README_PATH = Path(__file__).with_name("README.md")
MARKERS = {
    "calibration": ("<!-- rounds-calibration:start -->", "<!-- rounds-calibration:end -->"),
    "improvement": ("<!-- rounds-improvement:start -->", "<!-- rounds-improvement:end -->"),
}


def episode_score(task_id: str, seed: int, anchor: str) -> dict[str, Any]:
    from environments.runner import make_policy, run_episode

    env = make(task_id, seed)
    return dict(record_score(run_episode(env, make_policy(anchor, env, seed))))


def _cell(values: list[float], threshold: float | None = None) -> dict[str, Any]:
    cell: dict[str, Any] = {"mean": round(statistics.mean(values), 3), "ci95": round(ci95(values), 3), "n": len(values)}
    if threshold is not None:
        cell["passes"] = sum(v >= threshold for v in values)
    return cell


def calibrate(
    *, workers: int = 1, write: bool = True, tasks: list[str] | None = None, heldout_seeds: Sequence[int] | str = tuple(range(1000, 1020))
) -> dict[str, Any]:
    """Steps 1-3 serially (a cell takes milliseconds; a tuning seed ~1 s for its reference) and, with `write`, the
    JSON and README tables. The signature is `python -m environments calibrate`'s; `workers` is ignored."""
    heldout = heldout_seeds_parse(heldout_seeds)
    specs = [t for t in list_tasks("improve-rounds") if tasks is None or t.key in tasks or t.id in tasks]
    if not specs:
        raise EnvError("unknown_task", f"tasks: no improve-rounds task among {tasks}")
    if overlap := sorted(set(heldout) & {s for t in specs for s in t.public_seeds}):
        raise EnvError("bad_seeds", f"heldout seeds {overlap} are calibration seeds; choose others (default 1000-1019)")
    result: dict[str, Any] = {"command": COMMAND, "heldout_seeds": [heldout[0], heldout[-1]], "tasks": {}}
    for task in specs:
        public = {a: statistics.mean(episode_score(task.id, s, a)["composite"] for s in task.public_seeds) for a in ANCHORS}
        threshold = round(min(0.95, max(max(public["do-nothing"], public["first-try"]) + 0.05, 0.8 * public["improver"])), 3)
        scores = {a: [episode_score(task.id, s, a) for s in heldout] for a in ANCHORS}
        result["tasks"][task.key] = {
            "split": task.split,
            "budget": task.spec["budget"],
            "pass_threshold": threshold,
            "public_means": {a: round(v, 3) for a, v in public.items()},
            "heldout": {a: _cell([s["composite"] for s in runs], threshold) for a, runs in scores.items()},
            "improvement": {
                a: {m: _cell([float(s["details"][m]) for s in scores[a]]) for m in ("rounds", "per_round", "late_share")}
                for a in ROUND_ANCHORS
            },
        }
    if write:
        ROUNDS_CALIBRATION_PATH.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        write_readme(result)
    return result


def tables(result: dict[str, Any]) -> dict[str, str]:
    lo, hi = result["heldout_seeds"]
    calibration = [
        f"Held-out seeds {lo}-{hi}: mean composite ± 95% CI half-width, passes k/n at the threshold (`{result['command']}`).\n",
        "| task (split) | threshold | " + " | ".join(ANCHORS) + " |",
        "| --- | --- |" + " --- |" * len(ANCHORS),
    ]
    improvement = [
        f"Held-out seeds {lo}-{hi}: mean ± 95% CI half-width of rounds used, verifier gain per round, and the share of the "
        "gain made in the last third of the rounds.\n",
        "| task | budget | anchor | rounds | gain per round | late share |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key, entry in result["tasks"].items():
        cells = [f"{c['mean']:.3f} ± {c['ci95']:.3f} ({c['passes']}/{c['n']})" for c in (entry["heldout"][a] for a in ANCHORS)]
        calibration.append(f"| {key} ({entry['split']}) | {entry['pass_threshold']} | " + " | ".join(cells) + " |")
        for anchor in ROUND_ANCHORS:
            figures = entry["improvement"][anchor]
            row = " | ".join(f"{figures[m]['mean']:.3f} ± {figures[m]['ci95']:.3f}" for m in ("rounds", "per_round", "late_share"))
            improvement.append(f"| {key} | {entry['budget']} | {anchor} | {row} |")
    return {"calibration": "\n".join(calibration), "improvement": "\n".join(improvement)}


def table_markdown(result: dict[str, Any]) -> str:
    return "\n\n".join(tables(result).values())


def write_readme(result: dict[str, Any], readme: Path = README_PATH) -> None:
    text = readme.read_text()
    for name, body in tables(result).items():
        start, end = MARKERS[name]
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end)
        assert rest, f"{readme} has no {start} marker"
        text = f"{before}{start}\n{body}\n{end}{after}"
    readme.write_text(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog=COMMAND, description="calibrate improve-rounds")
    parser.add_argument("--heldout-seeds", default="1000-1019")
    args = parser.parse_args()
    print(table_markdown(calibrate(heldout_seeds=args.heldout_seeds)))
