import math

import pytest

from environments.riskprobe.cara import certainty_equivalent, stake_scale, utility

COIN = ((0.5, 100.0), (0.5, 0.0))  # a fair coin for 100 credits


def test_risk_neutral_certainty_equivalent_is_the_expected_value():
    assert certainty_equivalent(0.0, COIN) == 50.0
    assert certainty_equivalent(0.0, ((0.2, -500.0), (0.8, 25.0))) == pytest.approx(-80.0)


def test_certainty_equivalents_match_hand_computed_values():
    # a = 0.01: -100 ln(0.5 + 0.5 e^-1) = -100 ln 0.683940 = 37.989; a = -0.01: 100 ln(0.5 + 0.5 e) = 62.011
    assert certainty_equivalent(0.01, COIN) == pytest.approx(37.9885, abs=1e-3)
    assert certainty_equivalent(-0.01, COIN) == pytest.approx(62.0115, abs=1e-3)
    assert utility(0.01, 100.0) == pytest.approx((1 - math.exp(-1)) / 0.01)
    assert utility(0.0, 42.0) == 42.0


def test_a_sure_amount_is_its_own_certainty_equivalent_at_any_a():
    for a in (-0.01, 0.0, 0.002, 0.05):
        assert certainty_equivalent(a, ((1.0, -75.0),)) == pytest.approx(-75.0)


def test_certainty_equivalent_falls_as_risk_aversion_rises_and_survives_large_stakes():
    values = [certainty_equivalent(a, COIN) for a in (-0.02, -0.005, 0.0, 0.005, 0.02)]
    assert values == sorted(values, reverse=True)
    # e^(0.02 * 5000) = e^100 overflows nothing in log-sum-exp form; the CE sits just above the worst outcome
    assert certainty_equivalent(0.02, ((0.5, -5000.0), (0.5, 5000.0))) == pytest.approx(-5000 + math.log(2) / 0.02)


def test_the_stake_scale_is_the_largest_absolute_change():
    assert stake_scale([((1.0, 30.0),), ((0.5, -400.0), (0.5, 100.0))]) == 400.0
