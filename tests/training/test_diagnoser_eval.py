from __future__ import annotations

import json

import pytest

from environments.registry import make
from training.diagnoser_eval import Labelled, aet_data, label, mistake_for, rule_scores, score_answers, weak_episode


def _calls(record):
    return [(c["name"], c["arguments"]) for s in record["steps"] for c in s["tool_calls"]]


def _answer(step, name, **arguments):
    return json.dumps({"step_index": step, "correction": {"name": name, "arguments": arguments}})


def test_the_weak_policy_makes_the_seeds_mistake_and_otherwise_plays_the_expert():
    assert [mistake_for(s) for s in (2, 3, 6, 11)] == ["wrong_color", "dither", "none", "skip_lookup"]
    assert weak_episode("toolgym/chain", 6)["header"]["score"]["passed"] is True
    dither = weak_episode("toolgym/chain", 3)
    assert _calls(dither)[1:4] == [("lookup", {"item": "lamp"}), ("lookup", {"item": "stone"}), ("lookup", {"item": "table"})]
    assert dither["header"]["score"]["passed"] is False and dither["header"]["termination_reason"] == "horizon_reached"
    assert _calls(weak_episode("toolgym/chain", 11)) == [("owner", {"person": "eve"}), ("answer", {"color": "yellow"})]


def test_labels_are_verified_rule_diagnoses_and_the_data_is_deterministic():
    diagnosis, recovery = label(weak_episode("toolgym/chain", 3))
    assert diagnosis["step_index"] == 4  # 4 calls spent after it: lookup + answer no longer fit in chain's 5
    assert diagnosis["correction"] == {"name": "lookup", "arguments": {"item": "paper"}}
    assert recovery["header"]["meta"]["recovery"]["train_from_step"] == 4 and recovery["header"]["score"]["passed"]
    first, again = aet_data("toolgym/chain", range(0, 8)), aet_data("toolgym/chain", range(0, 8))
    assert json.dumps(first.diagnosis_records) == json.dumps(again.diagnosis_records)
    assert len(first.labelled) + len(first.success_records) + first.unlabelled == 8
    assert [r["header"]["seed"] for r in first.success_records] == [6]


def test_agreement_and_replay_figures_on_hand_built_answers():
    wrong_color = weak_episode("toolgym/chain", 2)  # owner(gus) -> river, lookup(river), answer(orange): wrong
    right = make("toolgym/chain", 2).world.colors["river"]
    assert right != "orange"
    dither = weak_episode("toolgym/chain", 3)  # gus owns paper; three wrong lookups; the label is step 4
    a = Labelled(wrong_color, {"step_index": 3, "correction": {"name": "answer", "arguments": {"color": right}}})
    b = Labelled(dither, {"step_index": 4, "correction": {"name": "lookup", "arguments": {"item": "paper"}}})
    cases = [
        (a, _answer(3, "answer", color=right), (1, 1, 1)),  # the label itself
        (a, _answer(3, "answer", color="orange"), (1, 0, 1)),  # right step, the original mistake as "correction"
        (a, _answer(2, "lookup", item="river"), (0, 0, 1)),  # too early: the weak policy still answers wrong after
        (a, _answer(0, "owner", person="gus"), (0, 0, 1)),  # step 0 is the environment's: nothing to replay
        (a, "I think step three", (0, 0, 0)),
        (b, _answer(2, "lookup", item="paper"), (0, 1, 1)),  # earlier than the pivot, and it still passes on replay
        (b, _answer(4, "lookup", item="paper"), (1, 1, 1)),
    ]
    scores = score_answers([c[0] for c in cases], [c[1] for c in cases])
    assert [(s["agreement"], s["replay_pass"], s["parsed"]) for s in scores] == [c[2] for c in cases]
    assert rule_scores([a, b]) == [{"agreement": 1.0, "replay_pass": 1.0, "parsed": 1.0}] * 2
    with pytest.raises(AssertionError, match="answers for"):
        score_answers([a], [])
