"""PhantomEnv: the Env contract, bad inputs as error results, budget, scoring, snapshots (env.py, tools.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from environments.core import EnvError, ToolCall
from environments.phantom.env import PhantomEnv
from environments.phantom.tools import TOOLS
from tests.environments.phantom.conftest import small_task

BAD_CALLS: list[tuple[str, Any, str]] = [
    ("teleport", {}, "unknown_tool"),
    ("search", {}, "invalid_arguments"),
    ("search", {"query": "x", "limit": 3}, "invalid_arguments"),
    ("search", {"query": 42}, "invalid_arguments"),
    ("search", {"query": "founded", "k": True}, "invalid_arguments"),
    ("search", {"query": "founded", "k": 11}, "invalid_arguments"),
    ("search", {"query": "founded", "k": float("nan")}, "invalid_arguments"),
    ("search", {"query": ""}, "invalid_arguments"),
    ("search", {"query": "?!"}, "empty_query"),
    ("search", {"query": "a\x00b"}, "invalid_arguments"),
    ("search", {"query": "x" * 301}, "invalid_arguments"),
    ("search", "founded", "invalid_arguments"),
    ("open_article", {"article_id": "42"}, "invalid_arguments"),
    ("open_article", {"article_id": "a99999"}, "unknown_article"),
    ("open_article", {"article_id": ["a00001"]}, "invalid_arguments"),
    ("answer", {"text": ""}, "invalid_arguments"),
    ("answer", {"answer": "1843"}, "invalid_arguments"),
]


@pytest.mark.parametrize(("name", "arguments", "code"), BAD_CALLS)
def test_bad_input_is_an_error_result_not_an_exception(alice_env: PhantomEnv, name: str, arguments: Any, code: str) -> None:
    before = alice_env.state_hash()
    result = alice_env.step(ToolCall(name=name, arguments=arguments))
    assert result.is_error and result.content["error"] == code and result.content["message"]
    assert not result.done and alice_env.score().composite == 0.0
    assert alice_env.state_hash() != before  # the failed call still spent a step of the budget
    assert alice_env.score().details["errors"] == 1


def test_reset_twice_gives_the_same_observation_and_state(alice_env: PhantomEnv) -> None:
    alice_env.step(ToolCall("search", {"query": "founded"}))
    first = alice_env.reset()
    hash_after_reset = alice_env.state_hash()
    second = alice_env.reset()
    assert first == second and alice_env.state_hash() == hash_after_reset
    assert alice_env.question.text in first.text and first.data["articles"] == 300


def test_the_same_task_and_seed_give_the_same_question_and_results() -> None:
    a, b = PhantomEnv(small_task(), 11), PhantomEnv(small_task(), 11)
    assert a.question == b.question
    call = ToolCall("search", {"query": a.question.text, "k": 10})
    assert a.step(call).content == b.step(call).content
    assert a.state_hash() == b.state_hash()
    assert PhantomEnv(small_task(), 12).question != a.question


def test_search_lists_ranked_results_with_read_events(alice_env: PhantomEnv) -> None:
    title = alice_env.universe.by_id[alice_env.question.support[0]].title
    result = alice_env.step(ToolCall("search", {"query": title, "k": 3}))
    hits = result.content["results"]
    assert len(hits) == 3 and hits[0]["title"] == title
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert [(e.entity, e.op) for e in result.events] == [(f"article:{h['article_id']}", "read") for h in hits]


def test_opening_the_gold_chain_and_answering_scores_one_with_full_evidence(alice_env: PhantomEnv) -> None:
    question = alice_env.question
    for article_id in question.support:
        opened = alice_env.step(ToolCall("open_article", {"article_id": article_id}))
        assert opened.content["text"] == alice_env.universe.by_id[article_id].text
        assert opened.events[0].entity == f"article:{article_id}" and opened.events[0].op == "read"
    assert "gold" not in alice_env.score().details  # sealed until the end
    final = alice_env.step(ToolCall("answer", {"text": question.accepted[-1].upper()}))
    assert final.done and final.reward == 1.0 and final.termination_reason == "agent_stop"
    assert final.events[0].op == "write" and final.events[0].after == question.accepted[-1].upper()
    score = alice_env.score()
    assert score.passed and score.components == {"exact_match": 1.0, "f1": 1.0, "evidence_recall": 1.0}
    assert score.details["gold"] == question.answer and [t["tool"] for t in score.details["evidence_trail"]][-1] == "answer"
    again = alice_env.step(ToolCall("answer", {"text": "something else"}))
    assert (
        again.is_error and again.content["error"] == "episode_over" and alice_env.score().details["answer"] == question.accepted[-1].upper()
    )


def test_a_wrong_answer_scores_zero_but_keeps_its_evidence_recall(alice_env: PhantomEnv) -> None:
    alice_env.step(ToolCall("open_article", {"article_id": alice_env.question.support[0]}))
    alice_env.step(ToolCall("answer", {"text": "Nobody In Particular"}))
    score = alice_env.score()
    assert score.composite == 0.0 and not score.passed
    assert score.components["evidence_recall"] == pytest.approx(1 / len(alice_env.question.support))


def test_the_f1_variant_pays_partial_credit() -> None:
    env = next(e for e in (PhantomEnv(small_task(reward="f1", hops=[2]), s) for s in range(50)) if " " in e.question.answer)
    env.reset()
    first_word = env.question.answer.split(" ")[0]
    result = env.step(ToolCall("answer", {"text": f"{first_word} Zzyzx"}))
    assert 0.0 < result.reward < 1.0 and result.reward == env.score().composite == env.score().components["f1"]
    assert env.score().components["exact_match"] == 0.0


def test_doing_nothing_useful_runs_out_the_budget_and_scores_zero() -> None:
    env = PhantomEnv(small_task(max_steps=4), 3)
    env.reset()
    results = [env.step(ToolCall("search", {"query": "founded"})) for _ in range(4)]
    assert [r.done for r in results] == [False, False, False, True] and results[-1].termination_reason == "max_steps"
    score = env.score()
    assert score.composite == 0.0 and not score.passed and score.termination_reason == "max_steps"
    assert env.step(ToolCall("answer", {"text": env.question.answer})).is_error  # too late


def test_snapshot_and_restore_round_trip(alice_env: PhantomEnv) -> None:
    alice_env.step(ToolCall("search", {"query": "founded"}))
    alice_env.step(ToolCall("open_article", {"article_id": alice_env.question.support[0]}))
    blob, mark = alice_env.snapshot(), alice_env.state_hash()
    continuation = [ToolCall("open_article", {"article_id": "a00003"}), ToolCall("answer", {"text": "1843"})]
    first_run = [alice_env.step(c).content for c in continuation]
    end_hash, end_score = alice_env.state_hash(), alice_env.score()
    alice_env.restore(blob)
    assert alice_env.state_hash() == mark and not alice_env.done
    assert [alice_env.step(c).content for c in continuation] == first_run
    assert alice_env.state_hash() == end_hash and alice_env.score() == end_score
    fresh = PhantomEnv(small_task(), seed=7)
    fresh.restore(blob)
    assert fresh.state_hash() == mark  # a snapshot moves between processes as plain bytes


def test_restore_refuses_foreign_or_broken_snapshots(alice_env: PhantomEnv) -> None:
    other = PhantomEnv(small_task(), seed=8)
    with pytest.raises(EnvError) as mismatch:
        alice_env.restore(other.snapshot())
    assert mismatch.value.code == "snapshot_mismatch"
    for blob in (b"not json", json.dumps({"task": "x"}).encode(), json.dumps({"state": {"steps": 1, "bogus": 2}}).encode()):
        with pytest.raises(EnvError) as broken:
            alice_env.restore(blob)
        assert broken.value.code == "bad_snapshot"


def test_tools_are_declared_once_with_strict_schemas(alice_env: PhantomEnv) -> None:
    assert [t.name for t in alice_env.tools()] == ["search", "open_article", "answer"] == [t.name for t in TOOLS]
    for tool in alice_env.tools():
        assert tool.parameters["additionalProperties"] is False
        assert tool.openai_schema()["function"]["name"] == tool.name == tool.mcp_schema()["name"]
    assert alice_env.header()["env"] == "phantom" and len(alice_env.header()["tool_schema_hash"]) == 16


def test_the_summary_names_the_question_and_the_evidence_so_far(alice_env: PhantomEnv) -> None:
    alice_env.step(ToolCall("search", {"query": "Glass Orchard"}))
    alice_env.step(ToolCall("open_article", {"article_id": "a00002"}))
    summary = alice_env.summary()
    assert alice_env.question.text in summary and "a00002" in summary and "Glass Orchard" in summary and "2/24" in summary


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"hops": [5]}, "hops"),
        ({"articles": 10}, "articles"),
        ({"reward": "bleu"}, "reward"),
        ({"alias_rate": 1.5}, "alias_rate"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_task_knobs_fail_loudly_naming_the_knob(knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PhantomEnv(small_task(**knobs), 0)
