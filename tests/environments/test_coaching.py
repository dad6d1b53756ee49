"""Coaching notes: a coach reads the user's private reasoning and next utterance and writes, per user turn, how
the agent could have anticipated it; notes stay privileged (never in the actor's prompt or exports)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from environments import registry
from environments.coaching import (
    NOTE_KEY,
    RuleCoach,
    coach_episode,
    coach_notes,
    coachable_turns,
    notes_by_actor_step,
    without_coach_notes,
)
from environments.core import Action, Policy, ToolSpec
from environments.policies import make_policy
from environments.replay import replay_record
from environments.runner import run_episode
from tests.lab.play.chatdesk import TASK, chatdesk_registered


@pytest.fixture(scope="module")
def record() -> Iterator[dict[str, Any]]:
    with chatdesk_registered():
        env = registry.make(TASK.id, seed=1)
        yield run_episode(env, make_policy("clerk", env, 1))


class Echo(Policy):
    """Answers with what it was shown last, so a test can read the coach's prompt."""

    name = "echo-coach"

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        self.seen.append(history)
        return Action(message=f"note for step {history[-1]['meta']['anticipates_step']}")


def test_each_user_turn_after_an_actor_step_gets_a_note_from_the_rule_coach(record: dict[str, Any]) -> None:
    assert [(u["index"], a) for u, a in coachable_turns(record)] == [(2, 1), (4, 3)]
    coached = coach_episode(record, RuleCoach())
    assert coach_notes(coached) == [
        {
            "step": 2,
            "anticipates_step": 1,
            "coach": {"name": "rule-coach", "kind": "scripted"},
            "note": "The user was about to say \u201cI want a refund.\u201d (they were thinking: I will give the order number when they "
            "ask for it.). Ask for or offer that before they have to bring it up.",
        },
        {
            "step": 4,
            "anticipates_step": 3,
            "coach": {"name": "rule-coach", "kind": "scripted"},
            "note": "The user was about to say \u201cIt is O-202.\u201d (they were thinking: They asked for the number; mine is O-202.). "
            "Ask for or offer that before they have to bring it up.",
        },
    ]
    assert set(notes_by_actor_step(coached)) == {1, 3}
    assert NOTE_KEY not in str(record)  # the input record is unchanged
    assert replay_record(coached)["ok"]  # notes are not part of the state-hash chain


def test_the_coach_sees_the_conversation_so_far_and_the_privileged_brief_only(record: dict[str, Any]) -> None:
    coach = Echo()
    coach_episode(coach_episode(record, RuleCoach()), coach)  # coaching again replaces the notes
    first = coach.seen[0]
    assert [s["index"] for s in first] == [0, 1, 2] and first[-1]["role"] == "coach" and first[-1]["source"] == "system"
    assert "The user privately thought: I will give the order number" in first[-1]["message"]
    assert "The user will say next: I want a refund." in first[-1]["message"]
    assert all(NOTE_KEY not in (s.get("meta") or {}) for s in coach.seen[1][:-1])  # earlier notes are not shown back


def test_a_failing_or_silent_coach_leaves_no_note(record: dict[str, Any]) -> None:
    class Broken(Policy):
        def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
            if history[-1]["index"] == 2:
                raise RuntimeError("the endpoint is down")
            return Action(message="   ")

    assert coach_notes(coach_episode(coach_episode(record, RuleCoach()), Broken())) == [
        n for n in coach_notes(coach_episode(record, RuleCoach())) if n["step"] == 2
    ]  # step 2 kept its earlier note (the coach failed there); step 4's silent answer removed it


def test_notes_never_reach_the_actors_prompt(record: dict[str, Any]) -> None:
    pytest.importorskip("torch")
    from training.data import record_messages
    from training.policies.harness import build_messages

    coached = coach_episode(record, RuleCoach())
    assert "Ask for or offer that" in str(coached)
    prompt = build_messages(coached["steps"], system_prompt="You serve customers.", window_turns=20)
    assert "Ask for or offer that" not in str(prompt) and "It is O-202." in str(prompt)
    assert "Ask for or offer that" not in str(record_messages(coached))
    assert without_coach_notes(coached) == record
