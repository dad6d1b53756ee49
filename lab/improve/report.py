"""The loop's report: the chosen checkpoint against the starting agent on the test seeds, paired by (task, seed).

    report = loop_report(candidate=test_evaluation, baseline=baseline_evaluation)

Per scenario and per score component, the mean paired difference (candidate − baseline) with its 95% interval
(Student's t; for the composite and pass differences clipped to [-1, 1], as lab.rollouts.aggregate does) and the
interval's half-width before clipping (ci95); overall too. Only (task, seed) pairs both have count.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

from environments.stats import ci95
from lab.rollouts.aggregate import DIFFERENCE, mean_ci
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episodes


def _scores(evaluation: Evaluation) -> dict[tuple[str, int], dict[str, float]]:
    """{(task, seed): {"composite": c, "passed": 0/1, <component>: value}} of the evaluation's scored episodes."""
    out = {}
    for episode in evaluation_episodes(evaluation):
        components = (episode.score or {}).get("components") or {}
        values = {"composite": float(episode.composite or 0.0), "passed": float(bool(episode.passed))}
        values.update(
            {f"component:{k}": float(v) for k, v in components.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        )
        out[(episode.task.key, int(episode.seed or 0))] = values
    return out


def _diff(name: str, values: list[float]) -> dict[str, Any]:
    """A paired difference. A component's range is the environment's own, unknown here: its interval is not clipped."""
    ci = mean_ci(values, DIFFERENCE if name in ("composite", "passed") else (-math.inf, math.inf))
    return {"n": len(values), "mean": ci["mean"], "ci95": ci95(values) if values else None, "low": ci["low"], "high": ci["high"]}


def loop_report(*, candidate: Evaluation, baseline: Evaluation) -> dict[str, Any]:
    a, b = _scores(candidate), _scores(baseline)
    pairs = sorted(set(a) & set(b))
    diffs: dict[str, list[float]] = defaultdict(list)
    per_task: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    means: dict[str, dict[str, list[float]]] = {"candidate": defaultdict(list), "baseline": defaultdict(list)}
    for key in pairs:
        for name in sorted(set(a[key]) & set(b[key])):
            diff = a[key][name] - b[key][name]
            diffs[name].append(diff)
            per_task[key[0]][name].append(diff)
            means["candidate"][name].append(a[key][name])
            means["baseline"][name].append(b[key][name])
    metrics = sorted(diffs, key=lambda n: (n != "composite", n != "passed", n))
    return {
        "pairs": len(pairs),
        "unpaired": len(a) + len(b) - 2 * len(pairs),
        "metrics": metrics,
        "candidate": {
            "evaluation": candidate.pk,
            "agent": candidate.agent.name,
            "means": {n: statistics.fmean(v) for n, v in means["candidate"].items()},
        },
        "baseline": {
            "evaluation": baseline.pk,
            "agent": baseline.agent.name,
            "means": {n: statistics.fmean(v) for n, v in means["baseline"].items()},
        },
        "overall": {name: _diff(name, diffs[name]) for name in metrics},
        "per_task": [
            {"task": task, "diffs": {name: _diff(name, values[name]) for name in metrics if name in values}}
            for task, values in sorted(per_task.items())
        ],
        "wins": sum(d > 0 for d in diffs["composite"]),
        "losses": sum(d < 0 for d in diffs["composite"]),
        "ties": sum(d == 0 for d in diffs["composite"]),
    }
