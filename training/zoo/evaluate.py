"""A zoo model's evaluation table, for the environments it was trained on: held-out toolgym, Phantom 1-hop dev
against the keyword anchor, StoreBench calls, held-out service-desk calls.

    results = evaluate_model(path, spec)       # {"toolgym/lookup": {...}, "phantom/lookup-dev": {...}, "storebench": {...}}
    print(results_table(results))              # markdown

Everything is greedy and in the spec's prompt style (the one the model was trained with). Rates come with the
half-width of their 95% interval over episodes (environments.stats.ci95).
"""

from __future__ import annotations

import statistics
from typing import Any

from environments.policies import make_policy
from environments.records import Record, record_score
from environments.registry import list_tasks, make
from environments.stats import ci95
from training.modeling import load_model
from training.sampling import rollout_episodes
from training.scripted import scripted_episode
from training.zoo.corpus import HELD_OUT_SEED, training_task_ids
from training.zoo.specs import ZooSpec

EVAL_TOOLGYM = ("lookup", "chain")  # toolgym tasks evaluated when registered
PHANTOM_DEV = "phantom/lookup-dev"
DESK_TASK = "servicedesk/roaming-on"  # the service-desk experiments' template (training/experiments/selfdistill.py)
DESK_TURNS = 16  # agent turns per evaluated call: the longest training calls take ~12


def _rate(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values) if values else 0.0, "ci95": ci95(values), "n": float(len(values))}


def _play(model: Any, tokenizer: Any, jobs: list[tuple[str, int]], spec: ZooSpec, max_turns: int, max_new_tokens: int) -> list[Record]:
    records: list[Record] = []
    for start in range(0, len(jobs), 20):  # bounded memory on long prompts
        records += rollout_episodes(
            model,
            tokenizer,
            jobs[start : start + 20],
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            temperature=0.0,
            style=spec.prompt_style,
            max_prompt_tokens=spec.max_positions - max_new_tokens,
        )
    return records


def _component(record: Record, name: str) -> float:
    score = record_score(record)
    return float(score["components"].get(name, score["composite"]))


def _valid_rate(record: Record) -> float:
    metrics = record["header"]["metrics"]
    return metrics["valid_calls"] / max(metrics["valid_calls"] + metrics["invalid_calls"], 1)


def _toolgym(model: Any, tokenizer: Any, spec: ZooSpec, n: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    registered = {t.id for t in list_tasks("toolgym")}
    for key in EVAL_TOOLGYM:
        task = f"toolgym/{key}"
        if task in registered:
            records = _play(model, tokenizer, [(task, HELD_OUT_SEED + i) for i in range(n)], spec, 4, 48)
            results[task] = {
                "correct": _rate([float(bool(record_score(r)["passed"])) for r in records]),
                "seeds": f"{HELD_OUT_SEED}-{HELD_OUT_SEED + n - 1}",
            }
    return results


def _phantom(model: Any, tokenizer: Any, spec: ZooSpec, n: int) -> dict[str, dict[str, Any]]:
    records = _play(model, tokenizer, [(PHANTOM_DEV, i) for i in range(n)], spec, 6, 48)
    keyword = [scripted_episode(make_policy("keyword", make(PHANTOM_DEV, i), i), PHANTOM_DEV, i, max_turns=10) for i in range(n)]
    model_composite = [record_score(r)["composite"] for r in records]
    keyword_composite = [record_score(r)["composite"] for r in keyword]
    return {
        PHANTOM_DEV: {
            "accuracy": _rate([_component(r, "exact_match") for r in records]),
            "composite": _rate(model_composite),
            "keyword_accuracy": _rate([_component(r, "exact_match") for r in keyword]),
            "keyword_composite": _rate(keyword_composite),
            "paired_composite_diff": _rate([a - b for a, b in zip(model_composite, keyword_composite, strict=True)]),
            "seeds": f"0-{n - 1}",
        }
    }


def _storebench(model: Any, tokenizer: Any, spec: ZooSpec, n: int) -> dict[str, dict[str, Any]]:
    scenarios = training_task_ids("storebench")
    jobs = [(scenarios[i % len(scenarios)], HELD_OUT_SEED + i) for i in range(max(1, n // 5))]
    records = _play(model, tokenizer, jobs, spec, spec.storebench_turns, 96)
    valid = sum(r["header"]["metrics"]["valid_calls"] for r in records)
    attempts = valid + sum(r["header"]["metrics"]["invalid_calls"] for r in records)
    return {
        "storebench/train": {
            "valid_call_rate": {**_rate([_valid_rate(r) for r in records]), "mean": valid / max(attempts, 1)},
            "turns": spec.storebench_turns,
            "episodes": len(jobs),
        }
    }


def _servicedesk(model: Any, tokenizer: Any, spec: ZooSpec, n: int) -> dict[str, dict[str, Any]]:
    """Held-out seeds (other callers and records) of the experiments' template and of every training template."""
    templates = training_task_ids("servicedesk")
    suites = {
        DESK_TASK: [(DESK_TASK, HELD_OUT_SEED + i) for i in range(n)],
        "servicedesk/train": [(templates[i % len(templates)], HELD_OUT_SEED + i) for i in range(n)],
    }
    results: dict[str, dict[str, Any]] = {}
    for name, jobs in suites.items():
        records = _play(model, tokenizer, jobs, spec, DESK_TURNS, 96)
        results[name] = {
            "passed": _rate([float(bool(record_score(r)["passed"])) for r in records]),
            "composite": _rate([record_score(r)["composite"] for r in records]),
            "valid_call_rate": _rate([_valid_rate(r) for r in records]),
            "seeds": f"{HELD_OUT_SEED}-{HELD_OUT_SEED + n - 1}",
        }
    return results


SOURCES = {"toolgym": _toolgym, "phantom": _phantom, "storebench": _storebench, "servicedesk": _servicedesk}


def evaluate_model(path: str, spec: ZooSpec) -> dict[str, dict[str, Any]]:
    """The table's rows (see the module docstring) for the model at `path`: the environments it was trained on."""
    model, tokenizer = load_model(path, trainable=False)
    results: dict[str, dict[str, Any]] = {}
    for source in spec.sft_sources:
        results.update(SOURCES[source](model, tokenizer, spec, spec.eval_episodes))
    return results


def targets_reached(results: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """The issue's targets for the base model: lookup >= 80% correct, beats keyword on Phantom 1-hop dev, >= 95% valid calls."""
    out = {}
    if "toolgym/lookup" in results:
        out["toolgym/lookup >= 0.80 correct"] = results["toolgym/lookup"]["correct"]["mean"] >= 0.80
    if PHANTOM_DEV in results:
        phantom = results[PHANTOM_DEV]
        out["phantom/lookup-dev composite > keyword"] = phantom["composite"]["mean"] > phantom["keyword_composite"]["mean"]
    if "storebench/train" in results:
        out["storebench/train valid calls >= 0.95"] = results["storebench/train"]["valid_call_rate"]["mean"] >= 0.95
    return out


def _cell(rate: dict[str, float]) -> str:
    return f"{rate['mean']:.3f} ± {rate['ci95']:.3f}"


def results_table(rows: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Markdown: one column per model (name -> evaluation results), one row per measure."""
    names = list(rows)
    measures: list[tuple[str, Any]] = []
    for task in EVAL_TOOLGYM:
        measures.append((f"toolgym/{task} held-out correct (greedy)", lambda r, t=f"toolgym/{task}": r.get(t, {}).get("correct")))
    measures += [
        ("phantom/lookup-dev accuracy", lambda r: r.get(PHANTOM_DEV, {}).get("accuracy")),
        ("phantom/lookup-dev composite", lambda r: r.get(PHANTOM_DEV, {}).get("composite")),
        ("phantom/lookup-dev keyword anchor composite", lambda r: r.get(PHANTOM_DEV, {}).get("keyword_composite")),
        ("storebench/train valid call rate", lambda r: r.get("storebench/train", {}).get("valid_call_rate")),
        (f"{DESK_TASK} held-out passed", lambda r: r.get(DESK_TASK, {}).get("passed")),
        ("servicedesk/train templates held-out passed", lambda r: r.get("servicedesk/train", {}).get("passed")),
        ("servicedesk/train templates valid call rate", lambda r: r.get("servicedesk/train", {}).get("valid_call_rate")),
    ]
    lines = ["| measure | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, pick in measures:
        cells = [pick(rows[name]) for name in names]
        if all(cell is None for cell in cells):
            continue
        lines.append(f"| {label} | " + " | ".join("—" if c is None else _cell(c) for c in cells) + " |")
    return "\n".join(lines)
