"""The evidence rubric: the agent's cited edges scored against the question's certificate.

Rubric items are the certificate's edges and nodes, one item each. An edge item is met when the agent cites that
edge; a node item when some credited citation touches the node (partial credit for reaching the right entity by
a wrong relation). Only citations of edges a tool has SHOWN this episode are credited (the audit): an id pair
remembered from another episode of the same universe, or guessed, earns nothing.

    recall    = items met / items                          (edges + nodes of the certificate)
    precision = credited certificate edges cited / distinct edges cited   (0 when nothing is cited)
    f1        = 2 p r / (p + r)
    rubric    = ANSWER_WEIGHT x exact match + (1 - ANSWER_WEIGHT) x f1

Precision is what makes citing everything a losing move: every edge beside the proof dilutes it, so flooding the
citation list with every edge seen scores well below citing the proof alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from environments.graphcert.certificate import Certificate
from environments.graphcert.graph import split_edge
from environments.meta import ScoreComponent

ANSWER_WEIGHT = 0.5
_RUBRIC = "rubric (the composite on rubric-reward tasks)"
_SHOWN = "cited edges count only when a tool showed them this episode"
# What the viewer says of each score component (the module docstring, in a reader's words). The task's `reward`
# picks the composite: exact_match ("outcome") or rubric ("rubric"); every component is reported either way.
COMPONENTS = {
    "exact_match": ScoreComponent(
        "1 when the answer equals an accepted form of the gold answer (lower-cased, punctuation and articles dropped); "
        "the composite itself on outcome-reward tasks",
        ANSWER_WEIGHT,
        _RUBRIC,
        ("answer",),
    ),
    "evidence_f1": ScoreComponent(
        f"2 p r / (p + r) of evidence_precision p and evidence_recall r; {_SHOWN}", 1 - ANSWER_WEIGHT, _RUBRIC, ("answer",)
    ),
    "evidence_precision": ScoreComponent(
        f"proof edges cited / distinct edges cited (0 when nothing is cited), entering evidence_f1; {_SHOWN}", moved_by=("answer",)
    ),
    "evidence_recall": ScoreComponent(
        f"items of the answer's certificate met (its edges cited, its nodes touched by a credited citation) / items, "
        f"entering evidence_f1; {_SHOWN}",
        moved_by=("answer",),
    ),
    "rubric": ScoreComponent(
        f"{ANSWER_WEIGHT:g} × exact_match + {1 - ANSWER_WEIGHT:g} × evidence_f1; the composite on rubric-reward tasks "
        "(0 when no answer was given)",
        moved_by=("answer",),
    ),
}


@dataclass(frozen=True)
class RubricScore:
    precision: float
    recall: float
    f1: float
    items: list[dict[str, Any]]  # {"item": "edge"|"node", "target": ..., "met": bool}
    uncredited: list[str]  # cited but never shown by a tool: not credited


def canonical(text: str) -> str:
    return " ".join(text.split())


def score_evidence(cited: list[str], shown: set[str], certificate: Certificate) -> RubricScore:
    distinct = list(dict.fromkeys(canonical(c) for c in cited))
    credited = [c for c in distinct if c in shown]
    touched = {part for c in credited for part in (split_edge(c) or ("", "", ""))[::2]}
    met = [e in credited for e in certificate.edges] + [n in touched for n in certificate.nodes]
    kinds = ["edge"] * len(certificate.edges) + ["node"] * len(certificate.nodes)
    items = [{"item": k, "target": t, "met": m} for k, t, m in zip(kinds, (*certificate.edges, *certificate.nodes), met, strict=True)]
    recall = sum(met) / len(met) if met else 0.0
    hits = sum(1 for c in credited if c in certificate.edges)
    precision = hits / len(distinct) if distinct else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return RubricScore(precision, recall, f1, items, [c for c in distinct if c not in shown])


def rubric_reward(exact_match: float, evidence: RubricScore) -> float:
    return ANSWER_WEIGHT * exact_match + (1 - ANSWER_WEIGHT) * evidence.f1
