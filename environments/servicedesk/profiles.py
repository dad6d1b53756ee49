"""Named behaviour profiles of rule-based users: combinations of the 13 patterns (patterns.py) with parameters.

    profile      patterns (parameters that differ from the defaults)
    cooperative  none: answers what is asked, volunteers what it knows, confirms
    terse        reveal_when_asked, terse
    guarded      reveal_when_asked, refuse (times 1), challenge (prob 0.7)
    confused     wrong_then_correct, vague, change_mind, typos (typo_rate 0.03, informal False)
    impatient    several_requests, terse, impatience (patience_turns 2), ask_human (mood_at 0.45)
    difficult    refuse (times 2), change_mind, frustration (mood_step 0.3), ask_human, challenge (prob 0.8, max 3)
    chatty       several_requests, chatter (prob 0.7), typos

The same table, with every pattern's parameters, is in PATTERNS.md.

A profile lists its patterns in PATTERN_ORDER, the order apply_patterns and style_text run them in.
"""

from __future__ import annotations

from typing import Any

from environments.servicedesk.patterns import PATTERN_ORDER
from environments.servicedesk.speech import PATTERNS, Profile


def make_profile(name: str, **patterns: dict[str, Any]) -> Profile:
    """A profile from pattern name -> parameters given (the rest default); checked against the registry."""
    for pattern, params in patterns.items():
        assert pattern in PATTERNS, f"profile {name}: unknown pattern {pattern!r}"
        unknown = set(params) - set(PATTERNS[pattern].defaults)
        assert not unknown, f"profile {name}: pattern {pattern} has no parameters {sorted(unknown)}"
    ordered = sorted(patterns.items(), key=lambda item: PATTERN_ORDER.index(item[0]))
    return Profile(name, tuple((p, tuple(sorted(params.items()))) for p, params in ordered))


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        make_profile("cooperative"),
        make_profile("terse", terse={}, reveal_when_asked={}),
        make_profile("guarded", reveal_when_asked={}, refuse={"times": 1}, challenge={"prob": 0.7}),
        make_profile("confused", vague={}, wrong_then_correct={}, change_mind={}, typos={"typo_rate": 0.03, "informal": False}),
        make_profile("impatient", several_requests={}, impatience={"patience_turns": 2}, ask_human={"mood_at": 0.45}, terse={}),
        make_profile(
            "difficult",
            refuse={"times": 2},
            change_mind={},
            frustration={"mood_step": 0.3},
            ask_human={},
            challenge={"prob": 0.8, "max_challenges": 3},
        ),
        make_profile("chatty", several_requests={}, chatter={"prob": 0.7}, typos={"informal": True}),
    )
}


def all_profiles() -> list[Profile]:
    return list(PROFILES.values())


def profile_table() -> list[dict[str, Any]]:
    """One row per profile: its name and its patterns with their full parameters (for the README and reports)."""
    return [{"profile": p.name, "patterns": {name: p.params(name) for name, _ in p.patterns}} for p in all_profiles()]
