"""The statistics every experiment reports (pure: numpy, no torch).

Data: for each arm, `cells[train_seed] = [value per evaluation seed]` with the SAME evaluation seeds, in the
same order, for every training seed and every arm.

- summary: the mean over training seeds of the per-seed mean, with a Student's t 95% interval over training
  seeds (environments.stats.ci95): training-seed variance is what a replication would see.
- paired difference (method - baseline) on the same (training seed, evaluation seed) cells, with a 95%
  percentile interval from a seeded two-level bootstrap: resample training seeds with replacement, then, within
  each drawn seed, its evaluation seeds with replacement (both sources of variance, as in a nested design).
- minimum detectable effect: (1.96 + 0.84) x SE, SE being the bootstrap standard deviation of the paired mean:
  the difference a two-sided 5% test would have detected with 80% power. A null is reported with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from environments.stats import ci95

Z_ALPHA, Z_POWER = 1.96, 0.84  # two-sided 5% test, 80% power


@dataclass(frozen=True)
class Summary:
    mean: float
    ci: float  # half-width of the 95% interval over training seeds
    seeds: int


@dataclass(frozen=True)
class PairedDifference:
    mean: float  # method - baseline, averaged over the paired cells
    low: float
    high: float  # 95% bootstrap interval
    se: float
    mde: float


def summarise(cells: Mapping[int, Sequence[float]]) -> Summary:
    """Mean over training seeds of each seed's mean over evaluation seeds, +- the t-interval over seeds."""
    per_seed = [float(np.mean(values)) for _, values in sorted(cells.items())]
    assert per_seed, "no training seeds to summarise"
    return Summary(float(np.mean(per_seed)), ci95(per_seed), len(per_seed))


def minimum_detectable_effect(se: float) -> float:
    return (Z_ALPHA + Z_POWER) * se


def paired_matrix(method: Mapping[int, Sequence[float]], baseline: Mapping[int, Sequence[float]]) -> np.ndarray:
    """(training seeds, evaluation seeds) method - baseline on the seeds both arms share."""
    assert sorted(method) == sorted(baseline), f"arms trained on different seeds: {sorted(method)} vs {sorted(baseline)}"
    rows = []
    for seed in sorted(method):
        a, b = method[seed], baseline[seed]
        assert len(a) == len(b), f"training seed {seed}: {len(a)} vs {len(b)} evaluation episodes"
        rows.append(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return np.stack(rows)


def paired_difference(
    method: Mapping[int, Sequence[float]], baseline: Mapping[int, Sequence[float]], *, resamples: int = 2000, seed: int = 0
) -> PairedDifference:
    """method - baseline on the same cells, with the two-level bootstrap interval and the MDE (module docstring)."""
    d = paired_matrix(method, baseline)  # (S, E)
    rng = np.random.default_rng(seed)
    n_seeds, n_evals = d.shape
    seeds = rng.integers(n_seeds, size=(resamples, n_seeds))  # (R, S)
    evals = rng.integers(n_evals, size=(resamples, n_seeds, n_evals))  # (R, S, E)
    means = d[seeds[..., None], evals].mean(axis=(1, 2))  # (R,)
    se = float(means.std(ddof=1)) if resamples > 1 else 0.0
    low, high = np.percentile(means, [2.5, 97.5])
    return PairedDifference(float(d.mean()), float(low), float(high), se, minimum_detectable_effect(se))
