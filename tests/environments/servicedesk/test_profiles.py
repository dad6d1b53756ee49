"""Named behaviour profiles: the registry, their composition, and the behaviour each one shows in a conversation."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from environments.servicedesk.patterns import PATTERN_ORDER
from environments.servicedesk.profiles import PROFILES, all_profiles, make_profile, profile_table
from environments.servicedesk.signals import pattern_frequencies
from environments.servicedesk.speech import PATTERNS, Profile, Say, UserState, apply_patterns

from .conftest import ALICE_FACTS, ALICE_REQUEST, render, speak


def test_it_names_seven_profiles_each_in_pattern_order() -> None:
    assert list(PROFILES) == ["cooperative", "terse", "guarded", "confused", "impatient", "difficult", "chatty"]
    assert all_profiles() == list(PROFILES.values())
    for profile in all_profiles():
        names = [n for n, _ in profile.patterns]
        assert names == sorted(names, key=PATTERN_ORDER.index), profile.name
    used = {n for p in all_profiles() for n, _ in p.patterns}
    assert used == set(PATTERN_ORDER)  # every pattern is in some profile


def test_the_patterns_register_on_importing_the_contract_alone() -> None:
    code = "from environments.servicedesk.speech import PATTERNS; print(len(PATTERNS))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "13"


def test_cooperative_changes_nothing() -> None:
    plan = [ALICE_REQUEST, *ALICE_FACTS]
    assert apply_patterns(PROFILES["cooperative"], list(plan), UserState(), random.Random(0)) == plan


def test_profile_parameters_override_the_defaults_only_where_given() -> None:
    assert PROFILES["guarded"].params("challenge") == {"prob": 0.7, "max_challenges": 2}
    assert PROFILES["impatient"].params("impatience") == {**PATTERNS["impatience"].defaults, "patience_turns": 2}
    row = next(r for r in profile_table() if r["profile"] == "chatty")
    assert row["patterns"]["chatter"]["prob"] == 0.7 and set(row["patterns"]) == {"several_requests", "chatter", "typos"}


def test_make_profile_rejects_unknown_patterns_and_parameters() -> None:
    with pytest.raises(AssertionError, match="unknown pattern 'rude'"):
        make_profile("x", rude={})
    with pytest.raises(AssertionError, match=r"pattern chatter has no parameters \['rate'\]"):
        make_profile("x", chatter={"rate": 1})
    assert make_profile("x", terse={}, typos={}) == Profile("x", (("terse", ()), ("typos", ())))


def dialogue(profile: Profile, seed: int, turns: int = 10) -> list[str]:
    """A conversation in which the agent asks for both facts, asks again, makes claims and asks to confirm."""
    rng, state, texts = random.Random(seed), UserState(pending_requests=["Update my email."]), []
    for turn in range(turns):
        state.turn = turn
        state.asked = [] if turn == 0 else ["account_id"] if turn % 3 == 1 else ["account_id", "postcode"] if turn % 3 == 2 else []
        state.agent_claims = ["The switch fee is 25 euros."] if turn >= 3 else []
        plan = (
            [ALICE_REQUEST, *ALICE_FACTS] if turn == 0 else [*(f for f in ALICE_FACTS if f.key in state.asked), Say("confirm", value="yes")]
        )
        texts.append(speak(profile, plan, state, rng))
        state.revealed.update({k: "given" for k in state.asked})
    return texts


def frequencies(name: str) -> dict[str, float]:
    return pattern_frequencies(t for seed in range(20) for t in dialogue(PROFILES[name], seed))


def test_each_profile_shows_its_behaviour_more_than_the_cooperative_user() -> None:
    base = frequencies("cooperative")
    assert all(base[s] == 0.0 for s in ("chatter", "human", "challenge", "refusal", "frustration", "typos"))
    words = {n: sum(len(t.split()) for s in range(5) for t in dialogue(PROFILES[n], s)) for n in PROFILES}
    assert words["terse"] < words["cooperative"] / 2
    assert frequencies("guarded")["refusal"] > 0 and frequencies("guarded")["challenge"] > 0
    assert frequencies("confused")["vague"] > 0 and frequencies("confused")["correction"] > 0 and frequencies("confused")["change_mind"] > 0
    assert frequencies("impatient")["impatience"] > 0 and frequencies("impatient")["human"] > 0
    difficult = frequencies("difficult")
    assert min(difficult["frustration"], difficult["human"], difficult["challenge"], difficult["refusal"]) > 0
    chatty = frequencies("chatty")
    assert chatty["chatter"] > 0.4 and chatty["typos"] > 0.9 and chatty["several_requests"] > 0


def test_profiles_replay_exactly_for_a_seed() -> None:
    for profile in all_profiles():
        assert dialogue(profile, 3) == dialogue(profile, 3), profile.name


def test_the_cooperative_dialogue_reads_plainly() -> None:
    assert dialogue(PROFILES["cooperative"], 0, turns=2) == [
        render([ALICE_REQUEST, *ALICE_FACTS]),
        "My account id is A-1042. Yes, please go ahead.",
    ]
