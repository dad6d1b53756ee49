"""Answer normalisation, exact match and token F1 (scoring.py)."""

from __future__ import annotations

import pytest

from environments.phantom.scoring import exact_match, normalise_answer, token_f1


@pytest.mark.parametrize(
    ("raw", "normal"),
    [("The Velmora Institute.", "velmora institute"), ("41,200", "41200"), ("  an  Atlas ", "atlas"), ("O. Vasq", "o vasq"), ("", "")],
)
def test_it_normalises_case_punctuation_articles_and_spaces(raw: str, normal: str) -> None:
    assert normalise_answer(raw) == normal


def test_exact_match_accepts_any_alias_and_refuses_near_misses() -> None:
    accepted = ("Velmora Institute", "Velmora")
    assert exact_match("the velmora institute", accepted) == 1.0
    assert exact_match("Velmora", accepted) == 1.0
    assert exact_match("Velmora Inst", accepted) == 0.0
    assert exact_match("", accepted) == 0.0
    assert exact_match("...", accepted) == 0.0


def test_token_f1_gives_partial_credit() -> None:
    assert token_f1("Velmora Institute", ("Velmora Institute",)) == 1.0
    assert token_f1("Velmora Press", ("Velmora Institute",)) == pytest.approx(0.5)
    assert token_f1("Velmora", ("Velmora Institute", "Velmora")) == 1.0  # the best alias counts
    assert token_f1("the celebrated novel", ("novel",)) == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert token_f1("", ("novel",)) == 0.0
    assert token_f1("1843", ("1844",)) == 0.0
