"""How a rule-based user decides what to say, and where behaviour patterns change it.

    plan = [Say("request", text="I want to change my plan"), Say("fact", key="account_id", value="A-1042")]
    plan = apply_patterns(profile, plan, state, rng)          # each pattern of the profile, in PATTERN_ORDER
    text = style_text(profile, users.render(plan, state), state, rng)   # the utterance (users.py renders)

The simulator (users.py) first decides the content of its next turn as a list of `Say` items from its goal, the
facts it knows and what the agent asked (state); behaviour patterns (patterns.py: terse answers, revealing only
when asked, wrong details corrected later, ...) then rewrite that plan and the rendered text, each from its own
parameters and the simulator's seeded RNG. A profile is a set of patterns with parameters; no patterns is the
cooperative user. Everything here is deterministic given the seed and the conversation.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# What one item of a user's turn is:
#   request     the user's goal in their words (text)
#   fact        a fact the user knows (key, value), e.g. an account id, a date, a reason
#   confirm     yes/no to the agent's question (value "yes" | "no")
#   correction  a fact corrected (key, value; the earlier value in text)
#   question    a question back to the agent (text)
#   chatter     off-topic text
#   human       asks for a human agent
#   challenge   disputes a claim the agent made (text)
#   close       thanks / goodbye: the user considers the conversation over
#   refuse      declines to share a fact (key)
KINDS = ("request", "fact", "confirm", "correction", "question", "chatter", "human", "challenge", "close", "refuse")


@dataclass
class Say:
    kind: str
    key: str = ""
    value: str = ""
    text: str = ""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, f"Say kind {self.kind!r} is not one of {KINDS}"


@dataclass
class UserState:
    """What the simulator knows about the conversation so far (it is rebuilt from the record on replay)."""

    turn: int = 0
    asked: list[str] = field(default_factory=list)  # fact keys the agent asked for in its last message
    revealed: dict[str, str] = field(default_factory=dict)  # fact key -> the value the user gave (maybe wrong)
    pending_requests: list[str] = field(default_factory=list)  # goals not yet stated
    agent_claims: list[str] = field(default_factory=list)  # statements of the agent the user may challenge
    mood: float = 0.0  # 0 calm .. 1 furious; impatience and frustration raise it
    memory: dict[str, Any] = field(default_factory=dict)  # a pattern's own state between turns, by pattern name


# A pattern: (its parameters, the plan, the state, the RNG) -> the new plan. Style patterns change only text.
PlanPattern = Callable[[dict[str, Any], list[Say], UserState, random.Random], list[Say]]
TextPattern = Callable[[dict[str, Any], str, UserState, random.Random], str]


@dataclass(frozen=True)
class Pattern:
    name: str
    description: str
    defaults: dict[str, Any]
    plan: PlanPattern | None = None
    text: TextPattern | None = None


PATTERNS: dict[str, Pattern] = {}  # patterns.py registers the 13 behaviour patterns here


def register_pattern(pattern: Pattern) -> Pattern:
    assert pattern.name not in PATTERNS, f"pattern {pattern.name} registered twice"
    PATTERNS[pattern.name] = pattern
    return pattern


@dataclass(frozen=True)
class Profile:
    """A behaviour profile: patterns by name with their parameters (missing parameters take the defaults)."""

    name: str
    patterns: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    def params(self, pattern: str) -> dict[str, Any]:
        given = dict(next((p for n, p in self.patterns if n == pattern), ()))
        return {**PATTERNS[pattern].defaults, **given}


def apply_patterns(profile: Profile, plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    for name, _ in profile.patterns:
        pattern = PATTERNS[name]
        if pattern.plan is not None:
            plan = pattern.plan(profile.params(name), plan, state, rng)
    return plan


def style_text(profile: Profile, text: str, state: UserState, rng: random.Random) -> str:
    for name, _ in profile.patterns:
        pattern = PATTERNS[name]
        if pattern.text is not None:
            text = pattern.text(profile.params(name), text, state, rng)
    return text
