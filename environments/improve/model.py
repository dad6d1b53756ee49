"""The seeded model an improve task tunes: a linear predictor over a synthetic dataset, trained by gradient descent.

    data = make_dataset("quadratic", spec, seed)       # train / val / test rows from the task's own RNG stream
    evaluate(data, config, "val")                       # R^2 clipped to [0, 1]; deterministic, a few milliseconds

A config (`Config`) picks the learning rate, the L2 penalty, the epochs, the degree (2 adds each selected
feature's square) and the feature set. Training is full-batch gradient descent on the mean squared error over
the train Gram matrix (d x d, d <= 16), so one fit costs epochs x d^2 operations: ~3 ms at 100 epochs.
Everything is pure Python and a pure function of (task, spec, seed, config).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

# The search space: every config value is one of these (proposals are validated against them).
SPACE: dict[str, tuple[Any, ...]] = {
    "lr": (0.001, 0.003, 0.01, 0.03, 0.1, 0.3),
    "reg": (0.0, 0.001, 0.01, 0.1, 1.0),
    "epochs": (5, 20, 50, 100),
    "degree": (1, 2),
}
_DIVERGED = 1e6  # a weight beyond this means the learning rate blew training up: the model scores 0


@dataclass(frozen=True)
class Config:
    lr: float
    reg: float
    epochs: int
    degree: int
    features: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"lr": self.lr, "reg": self.reg, "epochs": self.epochs, "degree": self.degree, "features": list(self.features)}

    def changed(self, changes: dict[str, Any]) -> Config:
        # One canonical form per config (1.0 epochs is 1, a feature list is a sorted set), so equal configs hash equal.
        casts: dict[str, Any] = {"lr": float, "reg": float, "epochs": int, "degree": int, "features": lambda v: tuple(sorted(set(v)))}
        values = {k: casts[k](v) for k, v in changes.items()}
        return replace(self, **values)


def baseline_config(n_features: int) -> Config:
    """Every task starts here: all features, linear, a learning rate and epoch count that underfit."""
    return Config(lr=0.001, reg=0.1, epochs=5, degree=1, features=tuple(range(n_features)))


@dataclass(frozen=True)
class Dataset:
    x: dict[str, tuple[tuple[float, ...], ...]]  # split -> rows
    y: dict[str, tuple[float, ...]]
    informative: tuple[int, ...]  # the features the target depends on (hidden from the agent)
    squared: int | None  # the feature whose square enters the target, when the task has one
    cache: dict[Config, dict[str, float]] = field(default_factory=dict, compare=False, hash=False)


def make_dataset(key: str, spec: dict[str, Any], seed: int) -> Dataset:
    rng = random.Random(f"improve/data/{key}/{seed}")
    d = int(spec["n_features"])
    informative = tuple(sorted(rng.sample(range(d), int(spec["n_informative"]))))
    coefs = {i: rng.choice((-1, 1)) * rng.uniform(0.6, 1.4) for i in informative}
    squared = rng.choice(informative) if spec.get("quadratic") else None
    noise = float(spec["noise"])
    x: dict[str, tuple[tuple[float, ...], ...]] = {}
    y: dict[str, tuple[float, ...]] = {}
    for split in ("train", "val", "test"):
        rows = tuple(tuple(rng.gauss(0.0, 1.0) for _ in range(d)) for _ in range(int(spec[f"n_{split}"])))
        x[split] = rows
        y[split] = tuple(
            sum(c * row[i] for i, c in coefs.items())
            + (1.2 * (row[squared] ** 2 - 1.0) if squared is not None else 0.0)
            + rng.gauss(0.0, noise)
            for row in rows
        )
    return Dataset(x=x, y=y, informative=informative, squared=squared)


def _design(row: tuple[float, ...], config: Config) -> list[float]:
    out = [row[i] for i in config.features]
    if config.degree == 2:
        out += [(row[i] ** 2 - 1.0) / math.sqrt(2.0) for i in config.features]  # centred, unit variance
    return out


@lru_cache(maxsize=4096)
def _gram(
    rows: tuple[tuple[float, ...], ...], ys: tuple[float, ...], features: tuple[int, ...], degree: int
) -> tuple[list[list[float]], list[float], float]:
    """(X^T X / n, X^T (y - mean) / n, mean y) of the train split for one feature set; shared by every lr/reg/epochs."""
    config = Config(0.0, 0.0, 0, degree, features)
    design = [_design(row, config) for row in rows]
    mean = sum(ys) / len(ys)
    n, d = len(rows), len(design[0])
    gram = [[sum(r[a] * r[b] for r in design) / n for b in range(d)] for a in range(d)]
    moment = [sum(r[a] * (yv - mean) for r, yv in zip(design, ys, strict=True)) / n for a in range(d)]
    return gram, moment, mean


def fit(data: Dataset, config: Config) -> tuple[list[float], float] | None:
    """The weights and intercept gradient descent reaches, or None when it diverged."""
    gram, moment, mean = _gram(data.x["train"], data.y["train"], config.features, config.degree)
    d = len(moment)
    w = [0.0] * d
    for _ in range(config.epochs):
        grad = [sum(gram[a][b] * w[b] for b in range(d)) - moment[a] + config.reg * w[a] for a in range(d)]
        w = [w[a] - config.lr * grad[a] for a in range(d)]
        if any(abs(v) > _DIVERGED for v in w):
            return None
    return w, mean


def evaluate(data: Dataset, config: Config, split: str) -> float:
    """R^2 of the trained model on `split` ("val" or "test"), clipped to [0, 1] (worse than the mean scores 0)."""
    cached = data.cache.get(config)
    if cached is None:
        cached = data.cache[config] = {}
    if split not in cached:
        cached[split] = _r2(data, config, split)
    return cached[split]


def _r2(data: Dataset, config: Config, split: str) -> float:
    model = fit(data, config)
    if model is None:
        return 0.0
    w, intercept = model
    ys = data.y[split]
    mean = sum(ys) / len(ys)
    sse = sum(
        (yv - intercept - sum(a * b for a, b in zip(w, _design(row, config), strict=True))) ** 2
        for row, yv in zip(data.x[split], ys, strict=True)
    )
    sst = sum((yv - mean) ** 2 for yv in ys)
    return round(min(1.0, max(0.0, 1.0 - sse / sst)), 6)


def reference_config(data: Dataset) -> Config:
    """The hidden optimum the oracle reads: the informative features, the best lr/reg/degree at 100 epochs on
    the validation split (ties: first in SPACE order). The score's 1 is its test score."""
    candidates = [
        Config(lr=lr, reg=reg, epochs=100, degree=degree, features=data.informative)
        for degree in SPACE["degree"]
        for lr in SPACE["lr"]
        for reg in SPACE["reg"]
    ]
    return max(candidates, key=lambda c: evaluate(data, c, "val"))
