"""The rule-based user: answers what it is asked, confirms or declines, closes with the stop mark, replays exactly."""

from __future__ import annotations

from typing import Any

import pytest

from environments.servicedesk import speech
from environments.servicedesk.dialogue import STOP_MARK
from environments.servicedesk.speech import Pattern, Profile, Say, UserState
from environments.servicedesk.tasks import build_goal
from environments.servicedesk.users import PROFILES, RuleUser, goal_card, render


def _user(key: str = "update-email", seed: int = 2, profile: Profile | None = None) -> RuleUser:
    return RuleUser(build_goal(key, seed)[1], profile or PROFILES["cooperative"], seed)


def _history(*agent_messages: str) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"index": 0, "source": "env", "message": "opening"}]
    for text in agent_messages:
        steps.append({"index": len(steps), "source": "agent", "role": "actor", "message": text})
        steps.append({"index": len(steps), "source": "user", "role": "user", "message": "(reply)"})
    return steps[:-1]


def test_it_opens_with_its_first_request_and_gives_the_facts_it_is_asked_for() -> None:
    user = _user()
    facts = user.goal.facts
    assert user.opening() == user.goal.requests[0]
    reply = user.act(_history("Could you give me your phone number, date of birth and postcode, please?"), []).message
    assert (
        reply == f"My phone number is {facts['phone']}. My date of birth is {facts['date_of_birth']}. My postcode is {facts['postcode']}."
    )
    assert user.act(_history("What is the new email address?"), []).message == f"The new email is {facts['new_email']}."
    assert user.act(_history("And your order number?"), []).message == "I don't know my order number, sorry. Do you need it?"


def test_it_confirms_or_declines_as_its_goal_says_and_closes_at_anything_else() -> None:
    assert _user().act(_history("I'll update it. Shall I go ahead?"), []).message == "Yes, please go ahead."
    declining = _user("cancel-line-declines-fee")
    assert declining.act(_history("That costs £40.00. Do you want me to proceed?"), []).message == "No, please don't do that."
    assert _user().act(_history("Done. Is there anything else?"), []).message == f"That's all, thank you. Goodbye! {STOP_MARK}"


def test_a_second_request_comes_only_when_the_agent_asks_for_anything_else() -> None:
    user = _user("upgrade-and-roaming")
    assert user.opening() == user.goal.requests[0]
    history = _history("Done. Anything else?", "Done too. Anything else?")
    assert user.act(history[:2], []).message == user.goal.requests[1]
    assert user.act(history, []).message.endswith(STOP_MARK)


def test_it_keeps_no_state_between_calls_so_a_fresh_user_says_the_same() -> None:
    history = _history("Your phone number?", "Shall I go ahead?", "Anything else?")
    first = _user()
    said = [first.act(history[: i + 1], []).message for i in range(1, len(history), 2)]
    assert said == [_user().act(history[: i + 1], []).message for i in range(1, len(history), 2)]


def test_render_writes_every_kind_of_item() -> None:
    plan = [Say("correction", key="postcode", value="KT1 2AB", text="KT1 2AD"), Say("human"), Say("refuse", key="date_of_birth")]
    assert (
        render(plan, UserState())
        == "Sorry, I got that wrong: my postcode is KT1 2AB, not KT1 2AD. Can I speak to a human, please? I'd rather not give my date of birth."
    )


def test_a_profile_s_patterns_rewrite_the_plan_and_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def terse(params: dict[str, Any], plan: list[Say], state: UserState, rng: Any) -> list[Say]:
        return plan[:1]

    monkeypatch.setitem(speech.PATTERNS, "test-terse", Pattern("test-terse", "first item only", {}, plan=terse))
    monkeypatch.setitem(speech.PATTERNS, "test-shout", Pattern("test-shout", "upper case", {}, text=lambda p, t, s, r: t.upper()))
    profile = Profile("test", (("test-terse", ()), ("test-shout", ())))
    reply = _user(profile=profile).act(_history("Your phone number and postcode?"), []).message
    assert reply == f"MY PHONE NUMBER IS {_user().goal.facts['phone']}."


def test_the_goal_card_tells_a_model_the_goal_the_facts_and_how_to_end() -> None:
    card = goal_card(build_goal("cancel-line-declines-fee", 1)[1], PROFILES["cooperative"])
    assert "How about cancelling my line?" in card and "date of birth" in card and "say no" in card and STOP_MARK in card
