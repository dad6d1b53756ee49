"""Answer scoring: normalised exact match and token F1, in the SQuAD manner.

Normalisation lower-cases, drops punctuation (so "41,200" matches "41200"), the articles a/an/the and extra
white space. Both measures take the best match over every accepted surface form of the gold answer.
"""

from __future__ import annotations

import re
from collections import Counter

from environments.meta import ScoreComponent

_PUNCTUATION = re.compile(r"[^\w\s]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# What the viewer says of each score component. The task's `reward` picks the composite: exact_match ("em") or
# f1 ("f1"); every component is reported either way (environments/phantom/config.py).
COMPONENTS = {
    "exact_match": ScoreComponent(
        "1 when the answer equals an accepted form of the gold answer (lower-cased, punctuation and articles dropped); "
        "the composite on em-reward tasks",
        moved_by=("answer",),
    ),
    "f1": ScoreComponent(
        "best token-overlap F1 between the answer and an accepted form of the gold answer; the composite on f1-reward tasks",
        moved_by=("answer",),
    ),
    "evidence_recall": ScoreComponent(
        "share of the question's supporting articles the agent opened; reported, not part of the composite", moved_by=("open_article",)
    ),
}


def normalise_answer(text: str) -> str:
    text = _PUNCTUATION.sub("", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, accepted: tuple[str, ...] | list[str]) -> float:
    guess = normalise_answer(prediction)
    return 1.0 if guess and any(guess == normalise_answer(gold) for gold in accepted) else 0.0


def token_f1(prediction: str, accepted: tuple[str, ...] | list[str]) -> float:
    """Best token-overlap F1 between the prediction and any accepted answer; 0 for an empty prediction."""
    guess = normalise_answer(prediction).split()
    best = 0.0
    for gold in accepted:
        truth = normalise_answer(gold).split()
        common = sum((Counter(guess) & Counter(truth)).values())
        if not common:
            continue
        precision, recall = common / len(guess), common / len(truth)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
