"""The multisearch anchor's reading: question plans, facts read from articles, titles that fit a mention."""

from __future__ import annotations

from environments.phantom.env import PhantomEnv
from environments.phantom.reading import (
    Anchor,
    Description,
    expansions,
    lead_occupation,
    parse_question,
    read_attribute,
    read_relation,
    sentences,
    title_fits,
)
from tests.environments.phantom.conftest import small_task


def test_a_chain_question_becomes_its_anchor_and_relations_in_reading_order() -> None:
    plan = parse_question("In what year was the founder of the employer of Orsa Vasq born?")
    assert plan is not None and plan.ask == "attribute"
    assert plan.sides == (Description(Anchor("Orsa Vasq"), (("person", "employer"), ("organisation", "founder"))),)
    assert plan.attribute == (("person", "birth_year"),)


def test_a_constrained_anchor_keeps_the_occupation_and_an_entity_question_its_final_relation() -> None:
    plan = parse_question("Give the name of the organisation the painter surnamed Sakreind worked for.")
    assert plan is not None and plan.ask == "entity" and plan.final == ("person", "employer")
    assert plan.sides == (Description(Anchor("Sakreind", "painter"), ()),)


def test_one_hop_founding_questions_keep_both_kinds_they_may_mean() -> None:
    plan = parse_question("In what year was Velmora Institute founded?")
    assert plan is not None and set(plan.attribute) == {("city", "founded"), ("organisation", "founded")}


def test_a_comparison_splits_at_the_or_where_both_sides_parse() -> None:
    plan = parse_question("Which city has more inhabitants: the home city of Trahouk Theatre or the city where Kodo Thaeth was born?")
    assert plan is not None and plan.ask == "comparison" and plan.smaller_wins is False
    assert plan.sides == (
        Description(Anchor("Trahouk Theatre"), (("organisation", "headquarters"),)),
        Description(Anchor("Kodo Thaeth"), (("person", "birthplace"),)),
    )
    assert plan.attribute == (("city", "population"),)
    assert parse_question("Why is the sky blue?") is None


def test_every_generated_question_parses_to_its_gold_chain_of_relations() -> None:
    task = small_task(hops=[1, 2, 3, 4], comparison_rate=0.0)
    for seed in range(60):
        question = PhantomEnv(task, seed).question
        plan = parse_question(question.text)
        assert plan is not None, question.text
        relations = [r for _, r in plan.sides[0].relations] + ([plan.final[1]] if plan.final else [])
        gold = [hop.field for hop in question.chain]
        assert relations == gold[: len(relations)] and len(gold) - len(relations) in (0, 1), question.text


ARTICLE = (
    "Orsa Vasq (born 1801) was a cartographer. Not to be confused with Olen Vasq, a poet born in 1841. "
    "By comparison, Kel Tok was born in Brakholm. O. Vasq spent many years at Velmora. The cartographer was born in Talsin."
)


def test_relations_are_read_from_sentences_about_the_subject_only() -> None:
    assert sentences("O. Vasq was born in Talsin. The city lies in Keistaerian territory.") == [
        "O. Vasq was born in Talsin.",
        "The city lies in Keistaerian territory.",
    ]
    assert read_relation(ARTICLE, "Orsa Vasq", "person", "birthplace") == "Talsin"  # not the distractor's Brakholm
    assert read_relation(ARTICLE, "Orsa Vasq", "person", "employer") == "Velmora"
    assert read_attribute(ARTICLE, "Orsa Vasq", "person", "birth_year") == "1801"  # from the lead, not the namesake's 1841
    assert read_attribute(ARTICLE, "Orsa Vasq", "person", "occupation") == "cartographer"
    city = "Zos is a city. Zos lies in Keistaerian territory. The first settlement at the city dates from 950."
    assert read_relation(city, "Zos", "city", "country") == "Keistaerian"  # a demonym, not "Keistaerian territory"
    assert read_attribute(city, "Zos", "city", "founded") == "950"
    country = "Keistaerova is a country. The Keistaerian state dates from 1813."
    assert read_attribute(country, "Keistaerova", "country", "founded") == "1813"
    work = "The Iron Hours is a celebrated photo series. The Iron Hours was first shown to the public in 1901."
    assert read_attribute(work, "The Iron Hours", "work", "form") == "photo series"


def test_titles_fit_a_mention_by_name_or_alias_of_the_right_kind() -> None:
    assert title_fits("Velmora Institute", "Velmora", "organisation") and not title_fits("Velmora Lubil", "Velmora", "organisation")
    assert title_fits("Orsa Vasq", "O. Vasq", "person") and not title_fits("Kel Vasq", "O. Vasq", "person")
    assert title_fits("Talsinmere", "Talsin", "city") and not title_fits("1752 Talsinmere Fair", "Talsin", "city")
    assert title_fits("Keistaerova", "Keistaerian", "country")
    assert expansions("Talsin", "city")[:2] == ["Talsinmere", "Talsinholm"] and expansions("Talsin", "person") == []
    assert lead_occupation("The astronomer Fadrond Sorn was born in the year 1791.") == "astronomer"
    assert lead_occupation("Fadrond Sorn was an architect, born in 1852.") == "architect"
