"""Evaluation statistics over episode rows: plain functions of plain data, so re-grading reproduces them exactly.

A row is {"task": key, "seed": int, "composite": float, "passed": bool, "termination_reason": str}, and, for
role_stats, "roles": the record header's per-role accounting ({role: {"turns", "tokens", "cost", "calls"}}; absent
for a plain agent, whose every turn is the actor's).

    summarize(rows)        mean composite with its 95% interval, pass rate with its Wilson interval, pass^k, per-task table
    paired(rows_a, rows_b) the same (task, seed) pairs of two agents: mean difference with its interval
    role_stats(rows)       per role, turns, tokens and cost per episode; consultations per episode and success by them

Intervals respect the bounds of what they estimate, and carry their n: a rate gets the Wilson interval (inside
[0, 1] at any n); a mean of bounded values (composites in [0, 1], their paired differences in [-1, 1]) gets the
Student-t interval clipped to those bounds, which at n = 2 (t = 12.7) is most of the range, as it should be, not
an interval past 1. A bootstrap would be narrower there than the data justify (two values bound it).

pass^k (tau-bench): for a task with n seeds of which c passed, C(c, k) / C(n, k) is the chance that k seeds
drawn without replacement all pass; it is averaged over tasks with at least k seeds. pass^1 is the pass rate
averaged per task; a high pass^k means the agent succeeds reliably, not just sometimes.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from math import comb
from typing import Any

from environments.stats import wilson

# Two-sided 95% Student-t critical values for 1..30 degrees of freedom.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t_critical_95(df: int) -> float:
    """t_{0.975, df}: the table up to 30, then the Cornish-Fisher expansion around z (error below 1e-4)."""
    assert df >= 1, f"degrees of freedom must be at least 1, got {df}"
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


COMPOSITE = (0.0, 1.0)  # a composite score's range
DIFFERENCE = (-1.0, 1.0)  # the range of a difference of two composites or of two pass indicators


def mean_ci(values: list[float], bounds: tuple[float, float] = (-math.inf, math.inf)) -> dict[str, Any]:
    """Mean and its 95% interval, mean ± t·sd/√n clipped to the values' `bounds`; one value has no interval
    (low = high = None)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "low": None, "high": None}
    mean = statistics.fmean(values)
    if n == 1:
        return {"n": 1, "mean": mean, "sd": None, "low": None, "high": None}
    sd = statistics.stdev(values)
    low, high = bounded_t_interval(n, mean, sd, bounds)
    return {"n": n, "mean": mean, "sd": sd, "low": low, "high": high}


def bounded_t_interval(n: int, mean: float, sd: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """mean ± t·sd/√n (95%, n - 1 degrees of freedom) clipped to `bounds`; for n >= 2."""
    half = t_critical_95(n - 1) * sd / math.sqrt(n)
    return max(bounds[0], mean - half), min(bounds[1], mean + half)


def rate_ci(flags: list[bool]) -> dict[str, Any]:
    """A rate and its 95% Wilson interval; no rows, no rate (the interval of nothing is not [0, 1] to show)."""
    n = len(flags)
    if n == 0:
        return {"n": 0, "rate": None, "low": None, "high": None}
    low, high = wilson(sum(flags), n)
    return {"n": n, "rate": sum(flags) / n, "low": low, "high": high}


def pass_hat_k(passes_by_task: dict[str, list[bool]], k: int) -> float | None:
    eligible = [runs for runs in passes_by_task.values() if len(runs) >= k]
    if not eligible:
        return None
    return statistics.fmean(comb(sum(runs), k) / comb(len(runs), k) for runs in eligible)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_task[row["task"]].append(row)
    passes = {task: [bool(r["passed"]) for r in task_rows] for task, task_rows in by_task.items()}
    most_seeds = max((len(v) for v in passes.values()), default=0)
    return {
        "episodes": len(rows),
        "composite": mean_ci([float(r["composite"]) for r in rows], COMPOSITE),
        "pass_rate": statistics.fmean(bool(r["passed"]) for r in rows) if rows else None,
        "pass_interval": rate_ci([bool(r["passed"]) for r in rows]),
        "pass_hat_k": {str(k): pass_hat_k(passes, k) for k in range(1, most_seeds + 1)},
        "termination_reasons": dict(sorted(Counter(r.get("termination_reason") or "" for r in rows).items())),
        "per_task": [
            {
                "task": task,
                "n": len(task_rows),
                "composite": mean_ci([float(r["composite"]) for r in task_rows], COMPOSITE),
                "pass_rate": statistics.fmean(bool(r["passed"]) for r in task_rows),
                "pass_interval": rate_ci([bool(r["passed"]) for r in task_rows]),
            }
            for task, task_rows in sorted(by_task.items())
        ],
    }


def paired(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]]) -> dict[str, Any]:
    """A minus B on the (task, seed) pairs both have; pairing removes the seed-to-seed variance they share."""
    b_by_key = {(r["task"], r["seed"]): r for r in rows_b}
    pairs = [(a, b_by_key[(a["task"], a["seed"])]) for a in rows_a if (a["task"], a["seed"]) in b_by_key]
    diffs = [float(a["composite"]) - float(b["composite"]) for a, b in pairs]
    pass_diffs = [float(bool(a["passed"])) - float(bool(b["passed"])) for a, b in pairs]
    per_task: dict[str, list[float]] = defaultdict(list)
    for (a, _), diff in zip(pairs, diffs, strict=True):
        per_task[a["task"]].append(diff)
    return {
        "pairs": len(pairs),
        "composite_diff": mean_ci(diffs, DIFFERENCE),
        "pass_rate_diff": mean_ci(pass_diffs, DIFFERENCE),
        "wins": sum(d > 0 for d in diffs),
        "losses": sum(d < 0 for d in diffs),
        "ties": sum(d == 0 for d in diffs),
        "per_task": [{"task": task, "n": len(d), "composite_diff": statistics.fmean(d)} for task, d in sorted(per_task.items())],
        "unpaired": len(rows_a) + len(rows_b) - 2 * len(pairs),
    }


ROLE_FIGURES = ("turns", "tokens", "cost")


def consultations(row: dict[str, Any]) -> int:
    """The consultations of one episode: the consultant's calls (its turns where a header predates "calls")."""
    consultant = (row.get("roles") or {}).get("consultant") or {}
    return int(consultant.get("calls", consultant.get("turns", 0)) or 0)


def role_stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per role: the episodes it took part in and its mean turns, tokens and cost per episode (over all `rows`, so a
    role that acts in some episodes only is averaged with zeros for the others); consultations per episode with
    their interval; and success by consultations (how often episodes with k consultations passed)."""
    per_role: dict[str, dict[str, list[float]]] = defaultdict(lambda: {name: [] for name in ROLE_FIGURES})
    for row in rows:
        for role, figures in (row.get("roles") or {}).items():
            for name in ROLE_FIGURES:
                per_role[role][name].append(float((figures or {}).get(name) or 0.0))
    n = len(rows)
    roles = {
        role: {"episodes": len(values["turns"]), **{name: sum(values[name]) / n for name in ROLE_FIGURES}}
        for role, values in sorted(per_role.items())
    }
    by_count: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_count[consultations(row)].append(row)
    return {
        "episodes": n,
        "roles": roles,
        "consultations": mean_ci([float(consultations(r)) for r in rows], (0.0, math.inf)),
        "success_by_consultations": [
            {
                "consultations": k,
                "episodes": len(group),
                "pass_rate": statistics.fmean(bool(r["passed"]) for r in group),
                "composite": statistics.fmean(float(r["composite"]) for r in group),
            }
            for k, group in sorted(by_count.items())
        ],
    }
