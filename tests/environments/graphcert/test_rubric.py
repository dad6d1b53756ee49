"""The evidence rubric's arithmetic, by hand, on a made-up certificate."""

from __future__ import annotations

import pytest

from environments.graphcert.certificate import Certificate
from environments.graphcert.rubric import rubric_reward, score_evidence

EMPLOYER = "person:1 employer organisation:2"
BIRTHPLACE = "person:1 birthplace city:3"
FOUNDED = "organisation:2 founded 1843"
CERT = Certificate(edges=(EMPLOYER, FOUNDED), nodes=("person:1", "organisation:2"))
SHOWN = {EMPLOYER, BIRTHPLACE, FOUNDED}


def test_citing_exactly_the_certificate_scores_one():
    score = score_evidence([EMPLOYER, FOUNDED], SHOWN, CERT)
    assert (score.precision, score.recall, score.f1) == (1.0, 1.0, 1.0)
    assert rubric_reward(1.0, score) == 1.0 and rubric_reward(0.0, score) == 0.5


def test_an_extra_edge_halves_nothing_but_precision():
    # items: 2 edges + 2 nodes, all met -> recall 1; 2 of 3 cited edges are in the proof -> precision 2/3
    score = score_evidence([EMPLOYER, FOUNDED, BIRTHPLACE], SHOWN, CERT)
    assert score.recall == 1.0 and score.precision == pytest.approx(2 / 3)
    assert score.f1 == pytest.approx(0.8)  # 2 * (2/3) * 1 / (5/3)
    assert rubric_reward(1.0, score) == pytest.approx(0.9)


def test_half_the_proof_earns_its_items_and_nodes_touched_by_a_wrong_edge_count():
    # EMPLOYER met, FOUNDED not; person:1 and organisation:2 both touched -> recall 3/4; precision 1/1
    score = score_evidence([EMPLOYER], SHOWN, CERT)
    assert score.recall == pytest.approx(0.75) and score.precision == 1.0
    assert score.f1 == pytest.approx(2 * 0.75 / 1.75)
    # a wrong relation from the right person: only the node person:1 is met (1/4), precision 0 -> f1 0
    wrong = score_evidence([BIRTHPLACE], SHOWN, CERT)
    assert wrong.recall == pytest.approx(0.25) and wrong.precision == 0.0 and wrong.f1 == 0.0
    assert [i["met"] for i in wrong.items] == [False, False, True, False]


def test_edges_no_tool_showed_are_not_credited_but_still_dilute():
    score = score_evidence([EMPLOYER, FOUNDED], {EMPLOYER}, CERT)
    assert score.uncredited == [FOUNDED]
    assert score.recall == pytest.approx(0.75) and score.precision == pytest.approx(0.5)
    assert score_evidence([EMPLOYER, FOUNDED], set(), CERT).f1 == 0.0


def test_repeats_and_spacing_count_once_and_nothing_cited_scores_zero():
    assert score_evidence([EMPLOYER, f"  {EMPLOYER.replace(' ', '   ')} ", FOUNDED], SHOWN, CERT).f1 == 1.0
    empty = score_evidence([], SHOWN, CERT)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
