"""Calibration and the idea-critic comparison for improve; both rewrite their README tables.

    python -m environments calibrate improve                   # thresholds + held-out pass rates + the comparison
    python -m environments calibrate improve --heldout-seeds 1000-1019

1. Calibration seeds (each task's public seeds 0-2): every anchor plays each; these runs alone set
       pass_threshold = max(best mean of do-nothing / random-valid + 0.05, 0.8 x greedy's mean), at most 0.95
2. Held-out seeds (default 1000-1019, disjoint from the public ones): every anchor's mean composite, its 95%
   confidence half-width (Student's t) and passes k/n at step 1's threshold.
3. The idea critic at equal verification budget: critic-guided vs random-select (the same twelve proposals per
   seed, verified as far as the budget goes: chosen by the heuristic critic, or at random) and the oracle
   critic as a ceiling, on the held-out seeds; the paired difference with its 95% CI.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.core import EnvError
from environments.improve import CALIBRATION_PATH, anchors
from environments.records import record_score
from environments.registry import list_tasks, make
from environments.seeds import heldout_seeds_parse
from environments.stats import ci95

ANCHORS = ("do-nothing", "random-valid", "greedy", "oracle", "critic-guided", "random-select")
DEFAULT_HELDOUT_SEEDS = tuple(range(1000, 1020))
COMMAND = "python -m environments calibrate improve"
README_PATH = Path(__file__).with_name("README.md")
TABLES = {
    "calibration": ("<!-- calibration:start -->", "<!-- calibration:end -->"),
    "critic": ("<!-- critic:start -->", "<!-- critic:end -->"),
}


def composite(task_id: str, seed: int, anchor: str) -> float:
    from environments.runner import make_policy, run_episode

    env = make(task_id, seed)
    return float(record_score(run_episode(env, make_policy(anchor, env, seed)))["composite"])


def critic_run(task_id: str, seed: int, which: str) -> float:
    """One screened search with the heuristic critic, random selection, or the oracle critic."""
    from environments.runner import run_episode

    env = make(task_id, seed)
    factory = {"critic": anchors.critic_guided, "random": anchors.random_select_anchor, "oracle": anchors.oracle_critic_guided}[which]
    return float(record_score(run_episode(env, factory(env, seed)))["composite"])


def calibrate(
    *, workers: int = 1, write: bool = True, tasks: list[str] | None = None, heldout_seeds: Sequence[int] | str = DEFAULT_HELDOUT_SEEDS
) -> dict[str, Any]:
    """Runs steps 1-3 (serially: a task-seed-anchor cell takes ~0.1 s) and, with `write`, rewrites
    calibration.json and both README tables. `workers` is accepted for the CLI and ignored."""
    heldout = heldout_seeds_parse(heldout_seeds)
    specs = [t for t in list_tasks("improve") if tasks is None or t.key in tasks or t.id in tasks]
    if not specs:
        raise EnvError("unknown_task", f"tasks: no improve task among {tasks}")
    if overlap := sorted(set(heldout) & {s for t in specs for s in t.public_seeds}):
        raise EnvError("bad_seeds", f"heldout seeds {overlap} are calibration seeds; choose others (default 1000-1019)")
    result: dict[str, Any] = {"command": COMMAND, "heldout_seeds": [heldout[0], heldout[-1]], "tasks": {}}
    for task in specs:
        public = {a: statistics.mean(composite(task.id, s, a) for s in task.public_seeds) for a in ANCHORS}
        threshold = round(min(0.95, max(max(public["do-nothing"], public["random-valid"]) + 0.05, 0.8 * public["greedy"])), 3)
        cells = {}
        for anchor in ANCHORS:
            values = [composite(task.id, s, anchor) for s in heldout]
            cells[anchor] = {
                "mean": round(statistics.mean(values), 3),
                "ci95": round(ci95(values), 3),
                "passes": sum(v >= threshold for v in values),
                "n": len(values),
            }
        runs = {w: [critic_run(task.id, s, w) for s in heldout] for w in ("critic", "random", "oracle")}
        diffs = [c - r for c, r in zip(runs["critic"], runs["random"], strict=True)]
        critic = {w: {"mean": round(statistics.mean(v), 3), "ci95": round(ci95(v), 3)} for w, v in runs.items()}
        critic["difference"] = {"mean": round(statistics.mean(diffs), 3), "ci95": round(ci95(diffs), 3)}
        result["tasks"][task.key] = {
            "split": task.split,
            "pass_threshold": threshold,
            "public_means": {a: round(v, 3) for a, v in public.items()},
            "heldout": cells,
            "critic": critic,
            "budget": task.spec["budget"],
            "verify_cost": task.spec["verify_cost"],
        }
    if write:
        CALIBRATION_PATH.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        write_readme(result)
    return result


def table_markdown(result: dict[str, Any]) -> str:
    lo, hi = result["heldout_seeds"]
    head = f"Held-out seeds {lo}-{hi}: mean composite ± 95% CI half-width, passes k/n at the threshold (`{result['command']}`).\n\n"
    rows = ["| task (split) | threshold | " + " | ".join(ANCHORS) + " |", "| --- | --- |" + " --- |" * len(ANCHORS)]
    for key, entry in result["tasks"].items():
        cells = [f"{c['mean']:.3f} ± {c['ci95']:.3f} ({c['passes']}/{c['n']})" for c in (entry["heldout"][a] for a in ANCHORS)]
        rows.append(f"| {key} ({entry['split']}) | {entry['pass_threshold']} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows)


def report_markdown(result: dict[str, Any]) -> str:
    lo, hi = result["heldout_seeds"]
    head = (
        f"Seeds {lo}-{hi}; the same {anchors.SCREEN_PROPOSALS} proposals per seed for every selector, verified as far as the budget "
        f"goes; mean composite ± 95% CI half-width; difference = critic-guided - random-select, paired by seed (`{result['command']}`).\n\n"
    )
    rows = [
        "| task | verifications | random-select | critic-guided (heuristic) | oracle critic | difference |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for key, entry in result["tasks"].items():
        c = entry["critic"]
        n = int(entry["budget"] // entry["verify_cost"])
        cells = [
            f"{c[w]['mean']:+.3f} ± {c[w]['ci95']:.3f}" if w == "difference" else f"{c[w]['mean']:.3f} ± {c[w]['ci95']:.3f}"
            for w in ("random", "critic", "oracle", "difference")
        ]
        rows.append(f"| {key} | {n} | " + " | ".join(cells) + " |")
    return table_markdown(result) + "\n\n" + head + "\n".join(rows)


def write_readme(result: dict[str, Any], readme: Path = README_PATH) -> None:
    text = readme.read_text()
    full = report_markdown(result)
    parts = {"calibration": table_markdown(result), "critic": full[len(table_markdown(result)) + 2 :]}
    for name, (start, end) in TABLES.items():
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end)
        assert rest, f"{readme} has no {start} marker"
        text = f"{before}{start}\n{parts[name]}\n{end}{after}"
    readme.write_text(text)


if __name__ == "__main__":
    write_readme(json.loads(CALIBRATION_PATH.read_text()))
