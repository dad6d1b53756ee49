"""Pattern signals read from one utterance, and their frequencies over many (what fidelity reports compare)."""

from __future__ import annotations

import random

import pytest

from environments.servicedesk.signals import SIGNALS, pattern_frequencies, pattern_signals
from environments.servicedesk.speech import Profile, Say, UserState

from .conftest import ALICE_FACTS, ALICE_REQUEST, render, speak

HUMAN_TURNS = {
    "chatter": "Sure. btw my cat just walked over the keyboard haha",
    "human": "Can I please speak to a real person about this",
    "challenge": "Are you sure about that fee? I was told it was free.",
    "refusal": "I'd rather not give you my date of birth over chat.",
    "correction": "Sorry, I meant 1024 not 1042, my mistake.",
    "change_mind": "On second thought, let's keep the current plan.",
    "several_requests": "I need to move my booking and also add a second bag.",
    "vague": "It was sometime last month I think, not sure exactly.",
    "impatience": "How long is this going to take, I've been here ages.",
    "frustration": "This is RIDICULOUS, nothing works",
    "typos": "ok thx, can u check it",
    "terse": "A-1042.",
    "question": "Which plans can I switch to?",
}


def test_it_names_one_signal_per_example_and_nothing_in_a_plain_answer() -> None:
    assert set(HUMAN_TURNS) == set(SIGNALS)
    for name, text in HUMAN_TURNS.items():
        assert pattern_signals(text)[name], (name, text)
    plain = render([ALICE_REQUEST, *ALICE_FACTS])
    assert not any(pattern_signals(plain).values()), pattern_signals(plain)


def test_terse_counts_words_up_to_the_threshold() -> None:
    assert pattern_signals("yes")["terse"] and not pattern_signals("")["terse"]
    assert pattern_signals("yes that is right")["terse"] and not pattern_signals("yes that is right, go on please")["terse"]
    assert not pattern_signals("yes that is right", terse_words=3)["terse"]


def test_frequencies_are_shares_of_utterances() -> None:
    freq = pattern_frequencies(["ok thx", "Are you sure?", "My account id is A-1042, thanks for asking."])
    assert freq["typos"] == pytest.approx(1 / 3) and freq["challenge"] == pytest.approx(1 / 3)
    assert freq["question"] == pytest.approx(1 / 3) and freq["terse"] == pytest.approx(2 / 3)
    assert pattern_frequencies([]) == dict.fromkeys(SIGNALS, 0.0)


@pytest.mark.parametrize(
    ("pattern", "params", "signal", "state", "plan"),
    [
        ("chatter", {"prob": 1.0}, "chatter", UserState(), [ALICE_REQUEST]),
        ("ask_human", {}, "human", UserState(turn=9), [ALICE_FACTS[0]]),
        ("challenge", {"prob": 1.0}, "challenge", UserState(agent_claims=["The fee is 25 euros"]), [ALICE_FACTS[0]]),
        ("refuse", {}, "refusal", UserState(asked=["account_id"]), [ALICE_FACTS[0]]),
        ("change_mind", {}, "change_mind", UserState(), [Say("confirm", value="yes")]),
        ("several_requests", {}, "several_requests", UserState(pending_requests=["Update my email."]), [ALICE_REQUEST]),
        ("vague", {"hedge_prob": 0.0}, "vague", UserState(), [ALICE_REQUEST]),
        ("impatience", {}, "impatience", UserState(turn=5), [ALICE_FACTS[0]]),
        (
            "frustration",
            {},
            "frustration",
            UserState(turn=2, mood=0.8, asked=["account_id"], revealed={"account_id": "x"}),
            [ALICE_FACTS[0]],
        ),
        ("typos", {"typo_rate": 0.0}, "typos", UserState(), [ALICE_REQUEST]),
        ("terse", {}, "terse", UserState(asked=["account_id"]), [ALICE_FACTS[0], Say("confirm", value="yes")]),
    ],
)
def test_each_pattern_shows_its_signal_end_to_end(pattern: str, params: dict, signal: str, state: UserState, plan: list[Say]) -> None:
    profile = Profile(pattern, ((pattern, tuple(params.items())),))
    text = speak(profile, plan, state, random.Random(0))
    assert pattern_signals(text)[signal], text
    assert not pattern_signals(render(plan))[signal]  # the same plan without the pattern does not


def test_a_correction_shows_a_turn_after_the_wrong_value() -> None:
    profile, state, rng = Profile("slip", (("wrong_then_correct", ()),)), UserState(), random.Random(0)
    speak(profile, [ALICE_FACTS[0]], state, rng)
    state.turn = 1
    assert pattern_signals(speak(profile, [], state, rng))["correction"]
