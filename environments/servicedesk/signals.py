"""Which behaviour patterns one user utterance shows, read from its text alone (for fidelity reports).

The same measure is applied to human and simulated turns, so pattern frequencies compare like with like. Surface
cues only: a cue list is cheap, transparent and good enough to compare frequencies; it is no classifier. Two of the
13 patterns cannot be seen in a single utterance (reveal_when_asked and wrong_then_correct's first, wrong value);
the corrections that follow are what `correction` counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SIGNALS = (
    "terse",
    "typos",
    "chatter",
    "human",
    "challenge",
    "refusal",
    "correction",
    "change_mind",
    "several_requests",
    "vague",
    "impatience",
    "frustration",
    "question",
)

_CUES: dict[str, tuple[str, ...]] = {
    "chatter": (
        r"\bby the way\b",
        r"\bbtw\b",
        r"\bweather\b",
        r"\bmy (dog|cat|kids?|sister|brother|wife|husband)\b",
        r"\bcoffee\b",
        r"\bha(ha)?\b",
        r"\bweekend\b",
    ),
    "human": (r"\b(a |real |actual )?(human|person)\b", r"\b(manager|supervisor|representative)\b", r"\bsomeone else\b"),
    "challenge": (
        r"\bare you sure\b",
        r"\bthat'?s not (right|true|correct|what)\b",
        r"\bi don'?t think\b",
        r"\bthat'?s wrong\b",
        r"\bno way\b",
    ),
    "refusal": (
        r"\b(i'?d|i would) rather not\b",
        r"\bnot comfortable\b",
        r"\bprefer not\b",
        r"\bwon'?t (share|give|tell)\b",
        r"\bnone of your business\b",
    ),
    "correction": (r"\bsorry,? i meant\b", r"\bi mean\b", r"\bcorrection\b", r"\bnot \S+, (it'?s|it is)\b", r"\bmy mistake\b", r"\btypo\b"),
    "change_mind": (
        r"\bchanged? my mind\b",
        r"\bon second thought\b",
        r"\bactually,? (no|yes|wait|instead)\b",
        r"\binstead\b",
        r"\bwait,? no\b",
    ),
    "several_requests": (r"\balso\b", r"\banother thing\b", r"\bas well\b", r"\bwhile (i'?m|you'?re) at it\b"),
    "vague": (r"\bsomething like\b", r"\bi think\b", r"\bmaybe\b", r"\bsort of\b", r"\bkind of\b", r"\bnot sure\b", r"\bor something\b"),
    "impatience": (
        r"\bhow long\b",
        r"\bspeed (this|it) up\b",
        r"\bhurry\b",
        r"\bcome on\b",
        r"\ball day\b",
        r"\btaking (so long|forever)\b",
    ),
    "frustration": (r"\bridiculous\b", r"\bunacceptable\b", r"\buseless\b", r"\balready told you\b", r"!!", r"\bseriously\b"),
}
_PATTERNS = {name: re.compile("|".join(cues), re.IGNORECASE) for name, cues in _CUES.items()}
_INFORMAL = re.compile(r"\b(u|ur|pls|plz|thx|ty|cuz|im|dont|cant|wont|gonna|wanna|ok|lol)\b", re.IGNORECASE)


def pattern_signals(text: str, *, terse_words: int = 5) -> dict[str, bool]:
    """For each name in SIGNALS, whether the utterance shows it (terse: at most `terse_words` words)."""
    words = text.split()
    signals = {name: bool(rx.search(text)) for name, rx in _PATTERNS.items()}
    shouting = any(len(w) >= 4 and w.isalpha() and w.isupper() for w in (w.strip(".,!?") for w in words))
    signals["frustration"] = signals["frustration"] or shouting
    signals["terse"] = 0 < len(words) <= terse_words
    # informal spellings, or a sentence that starts lower case (real users skip capitals; the renderer never does)
    signals["typos"] = bool(_INFORMAL.search(text)) or bool(text[:1].islower())
    signals["question"] = "?" in text
    return {name: signals[name] for name in SIGNALS}


def pattern_frequencies(texts: Iterable[str], *, terse_words: int = 5) -> dict[str, float]:
    """The share of utterances showing each signal (0.0 for every signal when there are none)."""
    counts = dict.fromkeys(SIGNALS, 0)
    n = 0
    for text in texts:
        n += 1
        for name, shown in pattern_signals(text, terse_words=terse_words).items():
            counts[name] += shown
    return {name: (counts[name] / n if n else 0.0) for name in SIGNALS}
