"""The anchors: what each one calls, and that each is a pure function of the history."""

from __future__ import annotations

from environments.graphcert.anchors import GraphWalkPolicy, OraclePolicy, RandomPolicy
from environments.runner import run_episode
from tests.environments.graphcert.conftest import episode


def _calls(record: dict) -> list[str]:
    return [s["tool_calls"][0]["name"] for s in record["steps"] if s.get("tool_calls")]


def test_graphwalk_finds_a_constrained_anchor_with_filter_and_cites_its_two_facts():
    env = next(e for e in map(episode, range(60)) if e.question.constrained and e.question.kind == "chain")
    record = run_episode(env, GraphWalkPolicy(env.question.text, env.config.max_steps))
    assert _calls(record)[0] == "filter"
    score = record["header"]["score"]
    assert score["components"]["exact_match"] == 1.0 and sorted(score["details"]["evidence"]) == sorted(env.certificate.edges)


def test_the_oracle_spends_one_call_per_subject_and_field_then_answers():
    env = next(e for e in map(episode, range(40)) if e.question.kind == "chain" and e.question.hops == 3 and not e.question.constrained)
    record = run_episode(env, OraclePolicy(env))
    calls = _calls(record)  # two relations, then the asked attribute (node) or final relation (neighbours)
    assert calls[:2] == ["neighbours", "neighbours"] and calls[2] in ("node", "neighbours") and calls[3:] == ["answer"]
    # with two calls allowed it still answers (right answer, part of the proof shown)
    tight = episode(env.seed, max_steps=2)
    short = run_episode(tight, OraclePolicy(tight))
    assert _calls(short) == ["neighbours", "answer"] and short["header"]["score"]["components"]["exact_match"] == 1.0
    assert 0.0 < short["header"]["score"]["components"]["evidence_f1"] < 1.0


def test_anchors_act_the_same_on_the_same_history():
    env = episode(13)
    record = run_episode(env, RandomPolicy(env.question.text, 13))
    again = run_episode(episode(13), RandomPolicy(env.question.text, 13))
    assert [s["tool_calls"] for s in record["steps"]] == [s["tool_calls"] for s in again["steps"]]
    assert record["steps"][-1]["tool_calls"][0]["name"] == "answer"
