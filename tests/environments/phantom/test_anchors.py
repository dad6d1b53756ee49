"""The anchor ladder: oracle >= multisearch > keyword > random on average, each a deterministic function of (seed, history)."""

from __future__ import annotations

import statistics

import pytest

from environments.phantom.anchors import KeywordPolicy, MultiSearchPolicy, expected_answer_type, phantom_anchor, spans_of_type
from environments.phantom.env import PhantomEnv
from tests.environments.phantom.conftest import play, small_task

SEEDS = range(120)  # fewer leaves keyword and random within noise of each other on mixed tasks


def mean_scores(task_knobs: dict[str, object], name: str) -> tuple[float, float]:
    task = small_task(**task_knobs)
    scores = []
    for seed in SEEDS:
        env = PhantomEnv(task, seed)
        score, _ = play(env, phantom_anchor(name, env, seed))
        scores.append(score)
    return statistics.mean(s.composite for s in scores), statistics.mean(s.components["evidence_recall"] for s in scores)


@pytest.mark.parametrize("knobs", [{"hops": [1], "comparison_rate": 0.0}, {}], ids=["one-hop", "mixed"])
def test_oracle_beats_keyword_beats_random(knobs: dict[str, object]) -> None:
    oracle, keyword, random_ = (mean_scores(knobs, name) for name in ("oracle", "keyword", "random"))
    assert oracle == (1.0, 1.0)
    assert oracle[0] > keyword[0] > random_[0]
    assert keyword[1] > random_[1]  # the search baseline at least finds the evidence more often
    multisearch = mean_scores(knobs, "multisearch")
    assert multisearch[0] >= 0.95 and multisearch[1] >= 0.95  # reading and following links, without the gold chain


def test_multisearch_checks_a_constrained_anchor_against_the_occupation_before_opening() -> None:
    task = small_task(hops=[1], comparison_rate=0.0, constraint_rate=1.0)
    for seed in range(10):
        env = PhantomEnv(task, seed)
        assert env.question.constrained
        score, history = play(env, phantom_anchor("multisearch", env, seed))
        opened = [c["arguments"]["article_id"] for s in history[1:] for c in s["tool_calls"] if c["name"] == "open_article"]
        assert opened == [env.question.support[0]] and score.composite == 1.0  # the right namesake, and only that one


def test_multisearch_answers_both_sides_of_a_comparison_after_reading_both() -> None:
    env = PhantomEnv(small_task(hops=[2], comparison_rate=1.0), 3)
    score, history = play(env, phantom_anchor("multisearch", env, 3))
    opened = [c["arguments"]["article_id"] for s in history[1:] for c in s["tool_calls"] if c["name"] == "open_article"]
    assert env.question.kind == "comparison" and sorted(opened) == sorted(env.question.support) and score.composite == 1.0


def test_multisearch_keeps_the_last_call_for_its_answer() -> None:
    env = PhantomEnv(small_task(hops=[4], comparison_rate=0.0, max_steps=5), 2)
    score, history = play(env, MultiSearchPolicy(env.question.text, max_steps=5))
    assert len(history) - 1 == 5 and history[-1]["tool_calls"][0]["name"] == "answer"
    assert score.termination_reason == "agent_stop"


def test_oracle_fits_a_tight_budget_by_skipping_searches() -> None:
    env = PhantomEnv(small_task(hops=[4], comparison_rate=1.0, max_steps=10), 1)
    score, history = play(env, phantom_anchor("oracle", env, 1))
    assert score.composite == 1.0 and len(history) - 1 == len(env.question.support) + 1 <= 10


@pytest.mark.parametrize("name", ["oracle", "multisearch", "keyword", "random"])
def test_anchors_replay_identically(name: str) -> None:
    runs = []
    for _ in range(2):
        env = PhantomEnv(small_task(), 5)
        _, history = play(env, phantom_anchor(name, env, 5))
        runs.append([(s["tool_calls"], s["state_hash"]) for s in history[1:]])
    assert runs[0] == runs[1] and runs[0]


def test_random_anchor_depends_on_its_seed() -> None:
    env = PhantomEnv(small_task(), 5)
    histories = {str([s["tool_calls"] for s in play(env, phantom_anchor("random", env, seed))[1]]) for seed in range(6)}
    assert len(histories) > 1


def test_unknown_anchor_names_the_choices() -> None:
    with pytest.raises(KeyError, match="oracle, multisearch, keyword, random"):
        phantom_anchor("genius", PhantomEnv(small_task(), 0), 0)


def test_keyword_reads_the_answer_type_from_the_question() -> None:
    assert expected_answer_type("In what year was Orlen Vasq born?") == "year"
    assert expected_answer_type("How many people live in Talsinmere?") == "number"
    assert expected_answer_type("What did Orlen Vasq do for a living?") == "description"
    assert expected_answer_type("Name the founder of Velmora Press.") == "name"
    text = "Born in 1801, Orlen Vasq worked as a cartographer. O. Vasq spent many years at Velmora Press."
    assert spans_of_type(text, "year", "When was Orlen Vasq born?") == ["1801"]
    assert spans_of_type(text, "name", "Who is the employer of Orlen Vasq?")[-1] == "Velmora Press"
    assert KeywordPolicy("In what year was Orlen Vasq born?").query == "Orlen Vasq"
