"""Fidelity report: how closely simulated users behave like human users, measured on their turns.

Pure Python (no Django, no torch) so the lab can compute it inline and a recipe can read it offline.

    report = fidelity_report(human_records, simulated_records)   # records: trajectory dicts
    report["length"]["ks"], report["turing"]["accuracy"]         # 0.5 accuracy = indistinguishable

A user turn is a step with role "user" and a text message. Human records are expected to carry
source "human" on those steps; the caller picks the two sets, this module only compares them.
The pattern detectors are a small generic set (DETECTORS): a caller passes its own (for instance the service
desk's signal detectors) through `detectors=`.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Detector = Callable[[str], bool]

_WORD = re.compile(r"[a-z0-9']+")
# Fact-like tokens: numbers, ids such as BK-1042 or ord_77, dates, e-mail addresses.
_FACT = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b[\w.+-]+@[\w-]+\.[\w.]+\b|\b[A-Za-z]{1,6}[-_]?\d+[A-Za-z0-9]*\b|\b\d+(?:[.,]\d+)?\b")
_GOAL_CHANGE = re.compile(r"\b(actually|instead|changed my mind|on second thought|rather have|scratch that)\b")
_REFUSAL = re.compile(r"\b(rather not|won't (?:tell|share|give)|not (?:telling|sharing)|none of your|prefer not)\b")


def _has(pattern: str) -> Detector:
    compiled = re.compile(pattern)
    return lambda text: bool(compiled.search(text.lower()))


DETECTORS: dict[str, Detector] = {
    "terse": lambda text: len(_WORD.findall(text.lower())) <= 3,
    "several_requests": lambda text: text.count("?") >= 2 or bool(re.search(r"\b(also|and another thing)\b", text.lower())),
    "vague": _has(r"\b(something|somehow|some kind|not sure|whatever|the thing)\b"),
    "impatient": _has(r"\b(hurry|quickly|how long|already told|come on|asap)\b"),
    "frustrated": lambda text: "!!" in text or bool(re.search(r"\b(ridiculous|annoying|useless|unacceptable)\b", text.lower())),
    "off_topic": _has(r"\b(weather|my dog|my cat|weekend|football|by the way)\b"),
    "informal": _has(r"(\bu\b|\bpls\b|\bthx\b|\blol\b|\bgonna\b|\bwanna\b|\bur\b)"),
    "refuses": lambda text: bool(_REFUSAL.search(text.lower())),
    "asks_for_human": _has(r"\b(real person|a human|human agent|your manager|supervisor)\b"),
    "challenges": _has(r"\b(are you sure|that's wrong|that is wrong|not true|that can't be)\b"),
    "goal_change": lambda text: bool(_GOAL_CHANGE.search(text.lower())),
}

HIST_BINS = 12


def user_turns(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The user turns of the records, each {"text", "facts"} (facts: env-provided fact keys when the step has them)."""
    turns: list[dict[str, Any]] = []
    for record in records:
        for step in record.get("steps") or ():
            if step.get("role") != "user" or not isinstance(step.get("message"), str) or not step["message"].strip():
                continue
            meta = step.get("meta") or {}
            facts = meta.get("facts") if isinstance(meta, dict) else None
            turns.append({"text": step["message"], "facts": facts if isinstance(facts, list) else None})
    return turns


def turn_features(turn: Mapping[str, Any], detectors: Mapping[str, Detector]) -> dict[str, Any]:
    text: str = turn["text"]
    lowered = text.lower()
    facts = turn.get("facts")
    return {
        "words": len(_WORD.findall(lowered)),
        "facts": len(facts) if facts is not None else len(_FACT.findall(text)),
        "question": "?" in text,
        "goal_change": bool(_GOAL_CHANGE.search(lowered)),
        "cooperative": not _REFUSAL.search(lowered),
        "patterns": {name: bool(detect(text)) for name, detect in detectors.items()},
    }


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical CDFs (0 when either is empty)."""
    if not a or not b:
        return 0.0
    xs, ys = sorted(a), sorted(b)
    i = j = 0
    gap = 0.0
    while i < len(xs) and j < len(ys):
        value = min(xs[i], ys[j])
        while i < len(xs) and xs[i] == value:
            i += 1
        while j < len(ys) and ys[j] == value:
            j += 1
        gap = max(gap, abs(i / len(xs) - j / len(ys)))
    return gap


def wasserstein(a: Sequence[float], b: Sequence[float]) -> float:
    """Wasserstein-1 distance between two samples (area between the empirical CDFs)."""
    if not a or not b:
        return 0.0
    points = sorted(set(a) | set(b))
    xs, ys = sorted(a), sorted(b)
    total = 0.0
    i = j = 0
    for left, right in zip(points, points[1:], strict=False):
        while i < len(xs) and xs[i] <= left:
            i += 1
        while j < len(ys) and ys[j] <= left:
            j += 1
        total += abs(i / len(xs) - j / len(ys)) * (right - left)
    return total


def _summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    mean = sum(ordered) / len(ordered) if ordered else 0.0
    return {"n": len(ordered), "mean": round(mean, 4), **{f"q{int(q * 100)}": round(_quantile(ordered, q), 4) for q in (0.1, 0.5, 0.9)}}


def _histogram(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    for value in values:
        index = next((k for k in range(len(edges) - 1) if value < edges[k + 1]), len(edges) - 2)
        counts[index] += 1
    return counts


def _rate(features: Sequence[Mapping[str, Any]], key: str) -> float:
    return round(sum(1 for f in features if f[key]) / len(features), 4) if features else 0.0


def _bag(turn: Mapping[str, Any], feats: Mapping[str, Any]) -> dict[str, float]:
    """Bag-of-features for the Turing classifier: words, length bucket, pattern flags."""
    bag: dict[str, float] = {f"w:{word}": 1.0 for word in _WORD.findall(turn["text"].lower())}
    bag[f"len:{min(feats['words'] // 4, 10)}"] = 1.0
    bag["facts"] = min(feats["facts"], 5) / 5
    bag.update({f"p:{name}": 1.0 for name, on in feats["patterns"].items() if on})
    return bag


def _train_logistic(
    rows: Sequence[dict[str, float]], labels: Sequence[int], *, epochs: int, rng: random.Random
) -> tuple[dict[str, float], float]:
    weights: dict[str, float] = {}
    bias = 0.0
    order = list(range(len(rows)))
    rate, l2 = 0.1, 1e-3
    for _ in range(epochs):
        rng.shuffle(order)
        for k in order:
            z = bias + sum(weights.get(name, 0.0) * value for name, value in rows[k].items())
            p = 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))
            grad = p - labels[k]
            bias -= rate * grad
            for name, value in rows[k].items():
                w = weights.get(name, 0.0)
                weights[name] = w - rate * (grad * value + l2 * w)
    return weights, bias


def turing_distance(
    human: Sequence[dict[str, float]], simulated: Sequence[dict[str, float]], *, folds: int = 5, seed: int = 0, epochs: int = 15
) -> dict[str, Any]:
    """Held-out accuracy of a logistic regression telling human (1) from simulated (0) turns.

    The larger set is subsampled to the smaller one's size so that 0.5 is chance; k-fold cross-validation, seeded.
    """
    rng = random.Random(seed)
    size = min(len(human), len(simulated))
    if size < folds:
        return {"accuracy": None, "folds": folds, "n_per_class": size, "reason": f"needs at least {folds} turns per set"}
    rows = [*rng.sample(list(human), size), *rng.sample(list(simulated), size)]
    labels = [1] * size + [0] * size
    order = list(range(len(rows)))
    rng.shuffle(order)
    correct = 0
    for fold in range(folds):
        test = set(order[fold::folds])
        train = [k for k in order if k not in test]
        weights, bias = _train_logistic([rows[k] for k in train], [labels[k] for k in train], epochs=epochs, rng=rng)
        for k in test:
            z = bias + sum(weights.get(name, 0.0) * value for name, value in rows[k].items())
            correct += int((z > 0) == (labels[k] == 1))
    return {"accuracy": round(correct / len(rows), 4), "folds": folds, "n_per_class": size}


def fidelity_report(
    human_records: Iterable[Mapping[str, Any]],
    simulated_records: Iterable[Mapping[str, Any]],
    *,
    detectors: Mapping[str, Detector] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare the user turns of two sets of records; returns plain JSON (the lab's page and API show it as is)."""
    detectors = DETECTORS if detectors is None else detectors
    sets = {"human": user_turns(human_records), "simulated": user_turns(simulated_records)}
    feats = {name: [turn_features(t, detectors) for t in turns] for name, turns in sets.items()}
    lengths = {name: [float(f["words"]) for f in fs] for name, fs in feats.items()}
    top = max([*lengths["human"], *lengths["simulated"], 1.0])
    width = max(1.0, math.ceil(top / HIST_BINS))
    edges = [width * k for k in range(HIST_BINS + 1)]
    per_set = {
        name: {
            "turns": len(fs),
            "length": _summary(lengths[name]),
            "length_histogram": _histogram(lengths[name], edges),
            "facts_per_turn": _summary([float(f["facts"]) for f in fs]),
            "clarification_rate": _rate(fs, "question"),
            "goal_change_rate": _rate(fs, "goal_change"),
            "cooperativeness": _rate(fs, "cooperative"),
            "patterns": {p: round(sum(1 for f in fs if f["patterns"][p]) / len(fs), 4) if fs else 0.0 for p in detectors},
        }
        for name, fs in feats.items()
    }
    bags = {name: [_bag(t, f) for t, f in zip(sets[name], feats[name], strict=True)] for name in sets}
    return {
        "sets": per_set,
        "length": {
            "edges": edges,
            "ks": round(ks_statistic(lengths["human"], lengths["simulated"]), 4),
            "wasserstein": round(wasserstein(lengths["human"], lengths["simulated"]), 4),
        },
        "facts": {"wasserstein": round(wasserstein(*[[float(f["facts"]) for f in feats[n]] for n in sets]), 4)},
        "turing": turing_distance(bags["human"], bags["simulated"], seed=seed),
        "patterns": sorted(detectors),
    }
