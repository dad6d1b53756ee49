"""The 13 behaviour patterns one by one: each effect, each parameter, and exact determinism for a seed."""

from __future__ import annotations

import random
from typing import Any

import pytest

from environments.servicedesk.patterns import CHATTER_LINES, PATTERN_ORDER, VAGUE_REQUEST, wrong_value
from environments.servicedesk.speech import PATTERNS, Profile, Say, UserState

from .conftest import ALICE_FACTS, ALICE_REQUEST, render, speak


def plan_of(name: str, plan: list[Say], state: UserState, seed: int = 0, **params: Any) -> list[Say]:
    pattern = PATTERNS[name]
    assert pattern.plan is not None
    return pattern.plan({**pattern.defaults, **params}, plan, state, random.Random(seed))


def text_of(name: str, text: str, state: UserState, seed: int = 0, **params: Any) -> str:
    pattern = PATTERNS[name]
    assert pattern.text is not None
    return pattern.text({**pattern.defaults, **params}, text, state, random.Random(seed))


def kinds(plan: list[Say]) -> list[str]:
    return [s.kind for s in plan]


def test_it_registers_the_13_patterns_in_a_fixed_order_each_documented() -> None:
    assert len(PATTERN_ORDER) == 13 and set(PATTERN_ORDER) <= set(PATTERNS)
    for name in PATTERN_ORDER:
        assert PATTERNS[name].description and (PATTERNS[name].plan or PATTERNS[name].text)


# terse ------------------------------------------------------------------------------------------------------------


def test_terse_drops_asides_and_volunteered_facts_past_max_items() -> None:
    plan = [ALICE_REQUEST, Say("chatter", text="Nice day."), Say("question", text="Why?"), *ALICE_FACTS]
    assert kinds(plan_of("terse", plan, UserState())) == ["request", "fact"]
    assert kinds(plan_of("terse", plan, UserState(), max_items=3)) == ["request", "fact", "fact"]
    assert kinds(plan_of("terse", plan, UserState(asked=["postcode"]), max_items=1)) == ["request", "fact"]  # asked: kept
    needed = [ALICE_REQUEST, Say("request", text="Also this."), Say("confirm", value="yes"), Say("human")]
    assert plan_of("terse", needed, UserState(), max_items=1) == needed  # what the task needs is never trimmed
    assert kinds(plan_of("terse", [Say("chatter", text="hm")], UserState())) == ["chatter"]  # never an empty turn


def test_terse_text_strips_pleasantries_and_gives_bare_values() -> None:
    assert text_of("terse", "Hi, please change my plan, thanks.", UserState()) == "change my plan"
    assert text_of("terse", "Can I talk to a human, please?", UserState()) == "Can I talk to a human?"
    assert text_of("terse", "My account id is A-1042. Yes, go ahead.", UserState()) == "A-1042. yes."
    assert text_of("terse", "My account id is A-1042.", UserState(), values_only=False) == "My account id is A-1042."


# reveal_when_asked ------------------------------------------------------------------------------------------------


def test_reveal_when_asked_gives_only_facts_the_agent_asked_for() -> None:
    plan = [ALICE_REQUEST, *ALICE_FACTS]
    assert kinds(plan_of("reveal_when_asked", plan, UserState())) == ["request"]
    asked = plan_of("reveal_when_asked", plan, UserState(asked=["postcode"]))
    assert [(s.kind, s.key) for s in asked] == [("request", ""), ("fact", "postcode")]
    assert plan_of("reveal_when_asked", plan, UserState(), slip=1.0) == plan


# wrong_then_correct -----------------------------------------------------------------------------------------------


def test_wrong_value_changes_one_digit_or_swaps_two_letters() -> None:
    rng = random.Random(3)
    for value in ("A-1042", "SW1A 2AA", "2026-05-01", "smith", "aa"):
        wrong = wrong_value(value, rng)
        assert wrong != value
        if any(c.isdigit() for c in value):
            assert len(wrong) == len(value) and sum(a != b for a, b in zip(wrong, value, strict=True)) == 1
        elif value == "smith":
            assert sorted(wrong) == sorted(value)


def test_wrong_then_correct_gives_a_wrong_value_then_corrects_it_delay_turns_later() -> None:
    state = UserState(turn=0)
    first = plan_of("wrong_then_correct", [ALICE_FACTS[0]], state, delay=2)
    assert first[0].key == "account_id" and first[0].value != "A-1042"
    wrong = first[0].value
    assert state.memory["wrong_then_correct"]["slips"]["account_id"] == {"wrong": wrong, "right": "A-1042", "turn": 0, "corrected": False}
    state.turn = 1
    again = plan_of("wrong_then_correct", [ALICE_FACTS[0], ALICE_FACTS[1]], state, delay=2)
    assert [(s.key, s.value) for s in again] == [("account_id", wrong), ("postcode", "SW1A 2AA")]  # consistent, max_wrong 1
    state.turn = 2
    assert plan_of("wrong_then_correct", [Say("confirm", value="yes")], state, delay=2)[1] == Say(
        "correction", key="account_id", value="A-1042", text=wrong
    )
    state.turn = 3
    assert plan_of("wrong_then_correct", [ALICE_FACTS[0]], state, delay=2) == [ALICE_FACTS[0]]  # corrected: the right value from now on


def test_wrong_then_correct_corrects_in_place_when_asked_again() -> None:
    state = UserState(turn=0)
    wrong = plan_of("wrong_then_correct", [ALICE_FACTS[0]], state)[0].value
    state.turn = 1
    assert plan_of("wrong_then_correct", [ALICE_FACTS[0]], state) == [Say("correction", key="account_id", value="A-1042", text=wrong)]


def test_wrong_then_correct_respects_keys_prob_and_delay() -> None:
    assert plan_of("wrong_then_correct", ALICE_FACTS, UserState(), keys=("postcode",))[0] == ALICE_FACTS[0]
    assert plan_of("wrong_then_correct", ALICE_FACTS, UserState(), prob=0.0) == ALICE_FACTS
    state = UserState()
    plan_of("wrong_then_correct", [ALICE_FACTS[0]], state, delay=3)
    for turn in (1, 2):
        state.turn = turn
        assert plan_of("wrong_then_correct", [], state, delay=3) == []
    state.turn = 3
    assert kinds(plan_of("wrong_then_correct", [], state, delay=3)) == ["correction"]
    both = plan_of("wrong_then_correct", ALICE_FACTS, UserState(), max_wrong=2)
    assert [s.value != f.value for s, f in zip(both, ALICE_FACTS, strict=True)] == [True, True]


# change_mind ------------------------------------------------------------------------------------------------------


def test_change_mind_says_no_to_the_first_confirmation_then_yes_the_next_turn() -> None:
    state = UserState(turn=2)
    assert plan_of("change_mind", [Say("confirm", value="yes")], state)[0].value == "no"
    state.turn = 3
    later = plan_of("change_mind", [Say("question", text="What now?")], state)
    assert [(s.kind, s.value) for s in later] == [("question", ""), ("confirm", "yes")]
    state.turn = 4
    assert plan_of("change_mind", [Say("confirm", value="yes")], state) == [Say("confirm", value="yes")]  # only once


def test_change_mind_waits_for_after_turn() -> None:
    state = UserState(turn=1)
    assert plan_of("change_mind", [Say("confirm", value="yes")], state, after_turn=2) == [Say("confirm", value="yes")]
    state.turn = 2
    assert plan_of("change_mind", [Say("confirm", value="yes")], state, after_turn=2)[0].value == "no"


# several_requests -------------------------------------------------------------------------------------------------


def test_several_requests_merges_pending_requests_into_one_turn() -> None:
    state = UserState(pending_requests=["Cancel the roaming add-on.", "Update my email.", "Check my last bill."])
    plan = plan_of("several_requests", [ALICE_REQUEST, ALICE_FACTS[0]], state)
    assert [s.text for s in plan if s.kind == "request"] == [
        ALICE_REQUEST.text,
        "Also, cancel the roaming add-on.",
        "Also, update my email.",
    ]
    assert kinds(plan)[-1] == "fact" and state.pending_requests == ["Check my last bill."]
    state = UserState(pending_requests=["Update my email."])
    assert len(plan_of("several_requests", [ALICE_REQUEST], state, max_requests=1)) == 1
    assert plan_of("several_requests", [ALICE_FACTS[0]], UserState(pending_requests=["x"])) == [ALICE_FACTS[0]]


# vague ------------------------------------------------------------------------------------------------------------


def test_vague_opens_vaguely_and_gives_the_precise_request_and_facts_a_turn_later() -> None:
    state = UserState()
    first = plan_of("vague", [ALICE_REQUEST, ALICE_FACTS[0], Say("chatter", text="hm")], state)
    assert first == [Say("request", text=VAGUE_REQUEST), Say("chatter", text="hm")]
    state.turn = 1
    assert plan_of("vague", [ALICE_FACTS[0]], state) == [ALICE_REQUEST, ALICE_FACTS[0]]  # the fact is not said twice
    state.turn = 2
    assert plan_of("vague", [ALICE_REQUEST], state) == [ALICE_REQUEST]  # vague only once


def test_vague_text_hedges_with_hedge_prob() -> None:
    hedged = text_of("vague", "It was last Tuesday. Then again.", UserState(), hedge_prob=1.0)
    assert hedged.startswith("It was last Tuesday, ") and hedged.endswith(". Then again.") and hedged != "It was last Tuesday. Then again."
    assert text_of("vague", "It was last Tuesday.", UserState(), hedge_prob=0.0) == "It was last Tuesday."


# impatience and frustration ---------------------------------------------------------------------------------------


def test_impatience_raises_mood_and_complains_after_patience_turns() -> None:
    state = UserState(turn=2)
    assert plan_of("impatience", [ALICE_REQUEST], state) == [ALICE_REQUEST] and state.mood == 0.0
    state.turn = 3
    plan = plan_of("impatience", [ALICE_REQUEST], state)
    assert kinds(plan) == ["request", "question"] and state.mood == pytest.approx(0.15)
    state = UserState(turn=9, mood=0.95)
    plan_of("impatience", [], state, patience_turns=9, mood_step=0.2)
    assert state.mood == 1.0


def test_frustration_rises_when_asked_again_for_what_was_given() -> None:
    state = UserState(turn=1, asked=["account_id"], revealed={"account_id": "A-1042"})
    assert plan_of("frustration", [ALICE_FACTS[0]], state) == [ALICE_FACTS[0]] and state.mood == pytest.approx(0.25)
    plan = plan_of("frustration", [ALICE_FACTS[0]], state)
    assert kinds(plan) == ["chatter", "fact"] and state.mood == pytest.approx(0.5)
    calm = UserState(turn=1, asked=["postcode"], revealed={"account_id": "A-1042"})
    assert plan_of("frustration", [], calm, mood_step=0.9) == [] and calm.mood == 0.0


def test_frustration_text_shouts_above_shout_at() -> None:
    assert text_of("frustration", "I want a refund.", UserState(mood=0.5)) == "I want a refund."
    shouted = text_of("frustration", "I want a refund.", UserState(mood=0.8))
    assert shouted.endswith("!!") and any(w.isupper() and len(w) > 3 for w in shouted.split())
    assert text_of("frustration", "I want a refund.", UserState(mood=0.5), shout_at=0.4).endswith("!!")


# chatter ----------------------------------------------------------------------------------------------------------


def test_chatter_adds_an_off_topic_line_with_probability_prob() -> None:
    always = plan_of("chatter", [ALICE_REQUEST], UserState(), prob=1.0)
    assert kinds(always) == ["request", "chatter"] and always[1].text in CHATTER_LINES
    assert plan_of("chatter", [ALICE_REQUEST], UserState(), prob=0.0) == [ALICE_REQUEST]
    share = sum(len(plan_of("chatter", [], UserState(), seed=s, prob=0.3)) for s in range(400)) / 400
    assert 0.24 < share < 0.36


# typos ------------------------------------------------------------------------------------------------------------


def test_typos_write_informally_and_keep_ids_intact() -> None:
    text = "Thanks, please check what you charged me because my account A-1042 was billed twice."
    informal = text_of("typos", text, UserState(), typo_rate=0.0)
    assert informal == "thx, pls check what u charged me cuz my account A-1042 was billed twice"
    all_typos = text_of("typos", "Please check my account A-1042 billing.", UserState(), typo_rate=1.0, informal=False)
    words = all_typos.split()
    assert words[0] == "Please" and words[4] == "A-1042" and words[1] != "check" and words[3] != "account"
    assert text_of("typos", text, UserState(), typo_rate=0.0, informal=False) == text


# refuse -----------------------------------------------------------------------------------------------------------


def test_refuse_declines_the_first_asked_fact_once_then_gives_it() -> None:
    state = UserState(asked=["postcode"])
    assert plan_of("refuse", [ALICE_FACTS[1]], state) == [Say("refuse", key="postcode")]
    assert plan_of("refuse", [ALICE_FACTS[1]], state) == [ALICE_FACTS[1]]
    state.asked = ["account_id"]
    assert plan_of("refuse", [ALICE_FACTS[0]], state) == [ALICE_FACTS[0]]  # only the touchy one
    assert plan_of("refuse", ALICE_FACTS, UserState()) == ALICE_FACTS  # volunteered facts are not refused


def test_refuse_honours_keys_and_times() -> None:
    state = UserState(asked=["account_id", "postcode"])
    refusals = [kinds(plan_of("refuse", ALICE_FACTS, state, keys=("account_id",), times=2)) for _ in range(3)]
    assert refusals == [["refuse", "fact"], ["refuse", "fact"], ["fact", "fact"]]


# ask_human --------------------------------------------------------------------------------------------------------


def test_ask_human_asks_once_when_mood_or_turn_passes_its_threshold() -> None:
    assert plan_of("ask_human", [ALICE_REQUEST], UserState(turn=7, mood=0.5)) == [ALICE_REQUEST]
    assert kinds(plan_of("ask_human", [], UserState(mood=0.6))) == ["human"]
    state = UserState(turn=8)
    assert kinds(plan_of("ask_human", [], state)) == ["human"] and plan_of("ask_human", [], state) == []
    assert kinds(plan_of("ask_human", [], state, repeat=True)) == ["human"]
    assert kinds(plan_of("ask_human", [], UserState(turn=2), turn_at=2)) == ["human"]


# challenge --------------------------------------------------------------------------------------------------------


def test_challenge_disputes_each_new_claim_up_to_max_challenges() -> None:
    state = UserState(agent_claims=["The fee is 25 euros."])
    plan = plan_of("challenge", [], state, prob=1.0)
    assert plan == [Say("challenge", text=plan[0].text)] and "The fee is 25 euros" in plan[0].text
    assert plan_of("challenge", [], state, prob=1.0) == []  # each claim once
    state.agent_claims += ["You are not eligible.", "It takes 5 days."]
    assert len(plan_of("challenge", [], state, prob=1.0)) == 1 and plan_of("challenge", [], state, prob=1.0) == []  # max 2
    assert plan_of("challenge", [], UserState(agent_claims=["x"]), prob=0.0) == []


# determinism ------------------------------------------------------------------------------------------------------


def conversation(profile: Profile, seed: int) -> tuple[list[str], UserState]:
    """Eight turns of a scripted conversation in which the agent asks, re-asks and claims things."""
    rng, state, texts = random.Random(seed), UserState(pending_requests=["Update my email.", "Check my bill."]), []
    for turn in range(8):
        state.turn, state.asked = turn, [["account_id"], ["account_id", "postcode"], [], ["postcode"]][turn % 4]
        state.agent_claims = ["The fee is 25 euros."] if turn >= 2 else []
        plan = [ALICE_REQUEST, *ALICE_FACTS] if turn == 0 else [*ALICE_FACTS, Say("confirm", value="yes")]
        texts.append(speak(profile, plan, state, rng))
        state.revealed.update({k: "?" for k in state.asked})
    return texts, state


def test_every_pattern_replays_exactly_for_a_seed() -> None:
    for name in PATTERN_ORDER:
        profile = Profile(name, ((name, ()),))
        a, b = conversation(profile, seed=7), conversation(profile, seed=7)
        assert a[0] == b[0] and a[1] == b[1], name
    everything = Profile("all", tuple((n, ()) for n in PATTERN_ORDER))
    assert conversation(everything, 1) == conversation(everything, 1)
    assert conversation(everything, 1)[0] != conversation(everything, 2)[0]


def test_the_renderer_stand_in_words_each_kind() -> None:
    assert render([Say("refuse", key="postcode"), Say("human")]) == "I'd rather not share my postcode. Can I talk to a human, please?"
