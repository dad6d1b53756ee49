"""Predicted against real transitions: exact next-tree match and node-level precision, recall and F1.

    scores = transition_scores(tree, predicted, real_next)    # {"exact", "predicted", "real", "correct"}
    table = evaluate(train_tuples, test_tuples)              # both predictors, per action kind and overall
    print(table_markdown(table))

A node is an element id with what it is in a tree (parent, role, name, value, states, bounds: see
worldmodel_predict.flatten). A transition's changed nodes are the ids whose node differs between the tree before
and the tree after, each paired with its node after (or None when it is gone); a predicted change is correct
only when the real transition made that same change. Precision, recall and F1 are micro-averaged over the
transitions of a group (sums of counts), so a group of steps that change nothing adds to neither; a predictor
that predicts no change anywhere has no precision to report ("-") and a recall of 0. Exact means the predicted
tree equals the real next tree, children order included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from environments.desktop.worldmodel_predict import EditModel, Flat, NoChange, flatten
from environments.stats import write_between_markers

README_PATH = Path(__file__).parent / "README.md"
TABLE_START, TABLE_END = "<!-- worldmodel:start -->", "<!-- worldmodel:end -->"


class Predictor(Protocol):
    name: str

    def predict(self, tree: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]: ...


def changed_nodes(before: Flat, after: Flat) -> set[tuple[str, Any]]:
    return {(i, after.get(i)) for i in before.keys() | after.keys() if before.get(i) != after.get(i)}


def transition_scores(tree: dict[str, Any], predicted: dict[str, Any], real: dict[str, Any]) -> dict[str, int]:
    before = flatten(tree)
    guessed, happened = changed_nodes(before, flatten(predicted)), changed_nodes(before, flatten(real))
    return {"exact": int(predicted == real), "predicted": len(guessed), "real": len(happened), "correct": len(guessed & happened)}


def summarise(rows: Sequence[dict[str, int]]) -> dict[str, Any]:
    """n, exact share, and micro precision / recall / F1 (None where undefined) of a group of transition scores."""
    n = len(rows)
    predicted, real, correct = (sum(r[k] for r in rows) for k in ("predicted", "real", "correct"))
    precision = correct / predicted if predicted else None
    recall = correct / real if real else None
    f1 = 2 * correct / (predicted + real) if predicted + real else None
    return {"n": n, "exact": sum(r["exact"] for r in rows) / n if n else 0.0, "precision": precision, "recall": recall, "f1": f1}


def score_predictor(predictor: Predictor, tuples: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{action kind | "all": summary} of `predictor` on `tuples`."""
    groups: dict[str, list[dict[str, int]]] = {}
    for t in tuples:
        row = transition_scores(t["tree"], predictor.predict(t["tree"], t["action"]), t["next_tree"])
        groups.setdefault(t["action"]["name"], []).append(row)
        groups.setdefault("all", []).append(row)
    return {kind: summarise(rows) for kind, rows in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0]))}


def evaluate(train: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Both predictors on the held-out `test` tuples; the learnt one learns from `train` only."""
    if not train or not test:
        raise ValueError(f"{len(train)} training and {len(test)} held-out tuples: both sets need some")
    predictors: list[Predictor] = [NoChange(), EditModel.learn(train)]
    return {"train": len(train), "test": len(test), "scores": {p.name: score_predictor(p, test) for p in predictors}}


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table_markdown(result: dict[str, Any], *, command: str = "") -> str:
    lines = [
        f"{result['train']} training transitions, {result['test']} held-out ones" + (f"; made by `{command}`" if command else "") + ".",
        "",
        "| predictor | action | n | exact | precision | recall | F1 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, by_kind in result["scores"].items():
        for kind, s in by_kind.items():
            label = f"**{kind}**" if kind == "all" else kind
            lines.append(
                f"| {name} | {label} | {s['n']} | {s['exact']:.3f} | {_cell(s['precision'])} | {_cell(s['recall'])} | {_cell(s['f1'])} |"
            )
    return "\n".join(lines)


def write_readme(result: dict[str, Any], command: str) -> None:
    write_between_markers(README_PATH, TABLE_START, TABLE_END, table_markdown(result, command=command))
