"""Scoring by hand: Sharpe, drawdown, return, turnover and the composite."""

from __future__ import annotations

import math

import pytest

from environments.optionsdesk.scoring import composite, max_drawdown, metrics, sharpe_ratio


def test_sharpe_is_mean_over_sample_sd_annualised_by_root_252() -> None:
    # returns +10%, -10%, +10%: mean 1/30, sample sd sqrt(((2/30)^2 * 2 + (4/30)^2) / 2) = 0.115470
    assert sharpe_ratio([100.0, 110.0, 99.0, 108.9]) == pytest.approx((1 / 30) / 0.1154701 * math.sqrt(252), rel=1e-5)
    assert sharpe_ratio([100.0, 100.0, 100.0]) == 0.0 and sharpe_ratio([100.0, 101.0]) == 0.0


def test_max_drawdown_is_the_largest_fall_from_a_running_peak() -> None:
    assert max_drawdown([100.0, 120.0, 90.0, 130.0, 104.0]) == pytest.approx(0.25)
    assert max_drawdown([100.0, 101.0, 102.0]) == 0.0


def test_metrics_and_the_composite() -> None:
    m = metrics(equity=[1e6, 1.01e6, 1.0e6, 1.05e6], traded=2.5e5)
    assert m["total_return"] == pytest.approx(0.05) and m["turnover"] == 0.25
    assert m["max_drawdown"] == pytest.approx(1 - 1.0 / 1.01, abs=1e-6)
    expected = 0.5 + 0.25 * math.tanh(m["sharpe"] / 2) + 0.25 * math.tanh(0.5) - 0.25 * (m["max_drawdown"] / 0.25)
    assert composite(m) == pytest.approx(expected, abs=1e-6)
    assert composite(metrics(equity=[1e6] * 10, traded=0.0)) == 0.5  # doing nothing
    assert composite({"sharpe": -50.0, "total_return": -0.9, "max_drawdown": 0.9, "turnover": 0.0}) == 0.0  # clipped
