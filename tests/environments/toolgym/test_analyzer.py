from __future__ import annotations

import json
from typing import Any

import pytest

from environments.analyzers import analyze_record
from environments.registry import make
from environments.runner import run_episode
from environments.toolgym.analyzer import ToolGymAnalyzer
from environments.toolgym.anchors import ExpertPolicy, RandomPolicy
from environments.trajectory import make_step

LAMP = "What is the color of the lamp? Look it up, then answer."
ADA = "Which color is the thing ada owns? Ask owner, look the thing up, then answer."


def _call(index: int, name: str, arguments: dict[str, Any], content: Any, *, is_error: bool = False, reward: float = 0.0) -> dict[str, Any]:
    step = make_step(
        index=index,
        tool_calls=[{"id": f"c{index}", "name": name, "arguments": arguments}],
        results=[{"call_id": f"c{index}", "content": content, "is_error": is_error}],
    )
    step["reward"] = reward
    return step


def _analyze(question: str, *steps: dict[str, Any]):
    history = [make_step(index=0, source="env", message=question), *steps[:-1]]
    return ToolGymAnalyzer().analyze(history, steps[-1])


def test_it_values_looking_up_the_asked_item_and_rejects_another_item():
    assert _analyze(LAMP, _call(1, "lookup", {"item": "lamp"}, {"item": "lamp", "color": "red"})).value == 1.0
    wrong = _analyze(LAMP, _call(1, "lookup", {"item": "box"}, {"item": "box", "color": "blue"}))
    assert wrong.value == 0.1 and "lookup(lamp)" in wrong.guidance


def test_it_checks_the_answer_against_the_color_the_lookup_returned():
    looked = _call(1, "lookup", {"item": "lamp"}, {"item": "lamp", "color": "red"})
    assert _analyze(LAMP, looked, _call(2, "answer", {"color": "red"}, {"ok": True})).value == 1.0
    wrong = _analyze(LAMP, looked, _call(2, "answer", {"color": "blue"}, {"ok": True}))
    assert wrong.value == 0.0 and "answer(red)" in wrong.guidance
    early = _analyze(LAMP, _call(1, "answer", {"color": "red"}, {"ok": True}))
    assert early.value == 0.0 and "lookup(lamp) first" in early.guidance
    again = _analyze(LAMP, looked, _call(2, "lookup", {"item": "lamp"}, {"item": "lamp", "color": "red"}))
    assert again.value == 0.3 and "answer(red)" in again.guidance


def test_it_reads_results_stored_as_json_text():
    looked = _call(1, "lookup", {"item": "lamp"}, json.dumps({"item": "lamp", "color": "red"}))
    assert _analyze(LAMP, looked, _call(2, "answer", {"color": "red"}, '{"ok": true}')).value == 1.0


def test_chain_rules_follow_the_owner_then_the_owned_item():
    other = _analyze(ADA, _call(1, "owner", {"person": "ben"}, {"person": "ben", "item": "box"}))
    assert other.value == 0.1 and "owner(ada)" in other.guidance
    early = _analyze(ADA, _call(1, "lookup", {"item": "box"}, {"item": "box", "color": "blue"}))
    assert early.value == 0.2 and "owner(ada)" in early.guidance
    owned = _call(1, "owner", {"person": "ada"}, {"person": "ada", "item": "shoe"})
    assert _analyze(ADA, owned).value == 1.0
    wrong_item = _analyze(ADA, owned, _call(2, "lookup", {"item": "box"}, {"item": "box", "color": "blue"}))
    assert wrong_item.value == 0.1 and "lookup(shoe)" in wrong_item.guidance
    looked = _call(2, "lookup", {"item": "shoe"}, {"item": "shoe", "color": "green"})
    assert _analyze(ADA, owned, looked).value == 1.0
    assert _analyze(ADA, owned, looked, _call(3, "answer", {"color": "green"}, {"ok": True})).value == 1.0
    assert _analyze(ADA, owned, looked, _call(3, "answer", {"color": "red"}, {"ok": True})).value == 0.0


def test_a_failed_call_scores_zero_and_quotes_the_error():
    failed = _call(1, "lookup", {"item": "moon"}, {"error": "no item 'moon'"}, is_error=True)
    analysis = _analyze(LAMP, failed)
    assert analysis.value == 0.0 and "no item 'moon'" in analysis.guidance


def test_echo_and_guess_rules():
    assert _analyze("Say the word apple.", _call(1, "say", {"word": "apple"}, {"ok": True}, reward=1.0)).value == 1.0
    assert "say(apple)" in _analyze("Say the word apple.", _call(1, "say", {"word": "river"}, {"ok": True})).guidance
    guess = "Guess the secret word: say one word."
    assert _analyze(guess, _call(1, "say", {"word": "river"}, {"ok": True}, reward=0.0)).value == 0.0
    assert _analyze(guess, _call(1, "say", {"word": "tiger"}, {"ok": True}, reward=1.0)).value == 1.0


@pytest.mark.parametrize("task", ["toolgym/lookup", "toolgym/chain", "toolgym/echo"])
def test_the_expert_scores_one_on_every_step_and_random_play_does_not(task):
    for seed in range(4):
        env = make(task, seed)
        assert all(a.value == 1.0 for _, a in analyze_record(run_episode(env, ExpertPolicy())))
    values = [a.value for seed in range(4) for _, a in analyze_record(run_episode(make(task, seed), RandomPolicy(seed)))]
    assert min(values) < 1.0


def test_analysis_is_deterministic():
    record = run_episode(make("toolgym/chain", 5), RandomPolicy(3))
    assert analyze_record(record) == analyze_record(json.loads(json.dumps(record)))
