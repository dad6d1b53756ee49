"""Answerability: every gold chain exists in the corpus, and the gold answer follows from it (questions.py)."""

from __future__ import annotations

import random

import pytest

from environments.phantom.questions import Hop, Question
from environments.phantom.universe import Universe, UniverseSpec

UNIVERSE = Universe(UniverseSpec("dev", 0, 800, 2, 0.6))


def surface_forms(hop: Hop) -> list[str]:
    """How the article may state the hop's value: an entity by name or alias, a number with or without commas."""
    entity = UNIVERSE.world.entities.get(hop.value) if ":" in hop.value else None
    if entity is not None:
        return [entity.name, *entity.aliases]
    if hop.field == "population":
        return [hop.value, f"{int(hop.value):,}"]
    return [hop.value]


def questions(n: int, **knobs: float) -> list[Question]:
    return [
        UNIVERSE.question(random.Random(i), hops=1 + i % 4, **{"comparison_rate": 0.0, "constraint_rate": 0.0, **knobs}) for i in range(n)
    ]


@pytest.mark.parametrize("knobs", [{}, {"comparison_rate": 1.0}, {"constraint_rate": 1.0}], ids=["chain", "comparison", "constrained"])
def test_each_supporting_article_states_its_hop(knobs: dict[str, float]) -> None:
    for question in questions(120, **knobs):
        for hop in question.chain:
            article = UNIVERSE.by_id[hop.article_id]
            assert article.subject == hop.entity, f"{question.text}: {hop} is not read from its entity's own article"
            assert (hop.entity, hop.field) in article.facts
            assert any(form in article.text for form in surface_forms(hop)), f"{hop} not stated in {article.text!r}"


def test_chains_link_hop_to_hop_and_end_at_the_answer() -> None:
    for question in questions(200):
        assert question.kind == "chain"
        assert len(question.support) == question.hops == len(question.chain)
        for previous, nxt in zip(question.chain, question.chain[1:], strict=False):
            assert nxt.entity == previous.value
        last = question.chain[-1]
        expected = UNIVERSE.world.entities[last.value].name if ":" in last.value else last.value
        assert question.answer == expected


def test_comparisons_name_the_entity_that_wins() -> None:
    compared = questions(100, comparison_rate=1.0)
    assert all(q.kind == "comparison" and len(q.support) == 2 * q.hops for q in compared)
    for question in compared:
        end_a, end_b = question.chain[question.hops - 1], question.chain[-1]
        assert end_a.field == end_b.field and end_a.value != end_b.value
        names = {UNIVERSE.world.entities[h.entity].name: int(h.value) for h in (end_a, end_b)}
        assert question.answer in names
        smaller = min(names, key=names.__getitem__)
        asks_smaller = any(w in question.text for w in ("first", "earlier", "older", "smaller"))
        assert (question.answer == smaller) == asks_smaller, question.text


def test_constrained_anchors_are_ambiguous_by_surname_alone_but_not_with_the_occupation() -> None:
    people = UNIVERSE.world.of("person")
    for question in [q for q in questions(80, constraint_rate=1.0) if q.constrained]:
        anchor = UNIVERSE.world.entities[question.chain[0].entity]
        family, occupation = anchor.attrs["family"], anchor.attrs["occupation"]
        assert f"{occupation} {family}" in question.text or f"{occupation} surnamed {family}" in question.text
        assert anchor.name not in question.text
        namesakes = [p for p in people if p.attrs["family"] == family]
        assert len(namesakes) > 1 and sum(p.attrs["occupation"] == occupation for p in namesakes) == 1


def test_the_answer_never_appears_in_the_question_and_hops_cover_one_to_four() -> None:
    asked = questions(200, comparison_rate=0.2, constraint_rate=0.2)
    assert {q.hops for q in asked} == {1, 2, 3, 4}
    for question in asked:
        if question.kind == "comparison" and question.hops == 1:
            assert question.answer in question.text  # the two candidates are named
            continue
        assert all(a.lower() not in question.text.lower() for a in question.accepted)


def test_the_same_rng_seed_writes_the_same_question() -> None:
    first = UNIVERSE.question(random.Random(5), hops=3, comparison_rate=0.5, constraint_rate=0.5)
    again = UNIVERSE.question(random.Random(5), hops=3, comparison_rate=0.5, constraint_rate=0.5)
    assert first == again
