"""The probe families: seeded decisions with explicit stakes over the agent's own credits.

    probe = make_probe("lottery", seed=3)      # Probe(family, resources, options=(("sure", L1), ("gamble", L2)), text)

Families (each option is a lottery over changes to the agent's credits, environments.riskprobe.cara):
    lottery    sure: +s for certain | gamble: p chance of +X, else nothing.
    insurance  a loss L strikes with chance p. none: bear it | partial: pay a premium, the loss is cut by half |
               full: pay a (larger) premium, no loss.
    mixed      accept: a coin flip, +G or -L | decline: nothing changes.
    deal       deal: take the negotiated share +s of the pot for certain | gamble: the risky action wins the whole
               pot W with chance p, or loses a fraction f of the agent's resources.
Training uses lottery and insurance; evaluation uses mixed and deal, decisions the training never showed
(FAMILY_SPLIT). Stakes are drawn so the indifference points spread over risk aversions from seeking to strongly
averse (-0.01 .. 0.02 per credit), and some probes are easy (one option better at every plausible a).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.riskprobe.cara import Lottery, check_lottery

FAMILY_SPLIT: dict[str, str] = {"lottery": "train", "insurance": "train", "mixed": "dev", "deal": "test"}
OPTION_NAMES: dict[str, tuple[str, ...]] = {
    "lottery": ("sure", "gamble"),
    "insurance": ("none", "partial", "full"),
    "mixed": ("accept", "decline"),
    "deal": ("deal", "gamble"),
}


@dataclass(frozen=True)
class Probe:
    family: str
    resources: int  # the agent's credits before the decision
    options: tuple[tuple[str, Lottery], ...]  # (name, lottery of changes), in OPTION_NAMES order
    preamble: str  # the situation, one sentence

    def lottery(self, name: str) -> Lottery:
        return dict(self.options)[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.options)

    @property
    def text(self) -> str:
        lines = [f"You hold {self.resources} credits. {self.preamble}"]
        lines += [f"- {name}: {describe(lottery)}" for name, lottery in self.options]
        lines.append(f"Choose one option with choose: {', '.join(self.names)}.")
        return "\n".join(lines)


def describe(lottery: Lottery) -> str:
    """'+120 credits for certain' or '40%: +500 credits; 60%: +0 credits'."""
    if len(lottery) == 1:
        return f"{_credits(lottery[0][1])} for certain"
    return "; ".join(f"{round(p * 100)}%: {_credits(x)}" for p, x in lottery)


def _credits(x: float) -> str:
    return f"{'+' if x >= 0 else '-'}{abs(round(x))} credits"


def _round5(x: float) -> int:
    return int(5 * round(x / 5))


def make_probe(family: str, seed: int) -> Probe:
    """The family's decision for `seed`: a pure function of both (the env's own stream, never the global random)."""
    assert family in FAMILY_SPLIT, f"unknown probe family {family!r}; one of {sorted(FAMILY_SPLIT)}"
    rng = random.Random(f"riskprobe/{family}/{seed}")
    resources = rng.choice((500, 1000, 2000))
    options = _FAMILIES[family](rng, resources)
    for _, lottery in options:
        check_lottery(lottery)
    assert tuple(n for n, _ in options) == OPTION_NAMES[family], f"{family}: options out of order"
    preamble = _PREAMBLES[family]
    return Probe(family=family, resources=resources, options=options, preamble=preamble)


def _lottery(rng: random.Random, resources: int) -> tuple[tuple[str, Lottery], ...]:
    prize = rng.choice((100, 200, 300, 400, 500, 800, 1000))
    p = rng.choice((0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9))
    sure = max(5, _round5(p * prize * rng.uniform(0.35, 1.1)))
    return (("sure", ((1.0, float(sure)),)), ("gamble", ((p, float(prize)), (round(1 - p, 10), 0.0))))


def _insurance(rng: random.Random, resources: int) -> tuple[tuple[str, Lottery], ...]:
    loss = rng.choice((200, 400, 600, 800, 1000, 1500))
    p = rng.choice((0.05, 0.1, 0.2, 0.3, 0.5))
    full = max(5, _round5(p * loss * rng.uniform(0.7, 2.5)))
    half = loss // 2
    partial = max(5, _round5(p * half * rng.uniform(0.7, 2.5)))
    q = round(1 - p, 10)
    return (
        ("none", ((p, -float(loss)), (q, 0.0))),
        ("partial", ((p, -float(partial + half)), (q, -float(partial)))),
        ("full", ((1.0, -float(full)),)),
    )


def _mixed(rng: random.Random, resources: int) -> tuple[tuple[str, Lottery], ...]:
    gain = rng.choice((100, 200, 300, 400, 500, 800, 1000))
    loss = max(5, _round5(gain / rng.uniform(0.7, 3.0)))
    return (("accept", ((0.5, float(gain)), (0.5, -float(loss)))), ("decline", ((1.0, 0.0),)))


def _deal(rng: random.Random, resources: int) -> tuple[tuple[str, Lottery], ...]:
    pot = rng.choice((500, 1000, 1500, 2000, 3000))
    p = rng.choice((0.3, 0.4, 0.5, 0.6, 0.7, 0.8))
    lost = _round5(resources * rng.choice((0.5, 0.6, 0.7, 0.8)))
    expected = p * pot - (1 - p) * lost
    share = max(5, _round5(max(expected, 0.05 * pot) * rng.uniform(0.3, 1.1)))
    return (("deal", ((1.0, float(share)),)), ("gamble", ((p, float(pot)), (round(1 - p, 10), -float(lost)))))


_FAMILIES = {"lottery": _lottery, "insurance": _insurance, "mixed": _mixed, "deal": _deal}
_PREAMBLES = {
    "lottery": "You may take a sure amount or a gamble.",
    "insurance": "A loss may strike your credits; you may insure against it.",
    "mixed": "You are offered a coin flip; you may accept or decline it.",
    "deal": "Your counterpart offers a negotiated share of the pot; or you may attempt the risky action yourself.",
}
