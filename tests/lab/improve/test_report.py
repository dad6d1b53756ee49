"""lab.improve.report: a paired difference's interval stays inside what a difference can be."""

from __future__ import annotations

import pytest

from lab.improve.report import _diff


def test_composite_and_pass_differences_are_clipped_to_their_range_and_components_are_not() -> None:
    # .9 and -.5: mean .2, sd .989949, t(1) = 12.706: ± 8.89 before clipping
    composite = _diff("composite", [0.9, -0.5])
    assert (composite["n"], composite["low"], composite["high"]) == (2, -1.0, 1.0)
    assert composite["mean"] == pytest.approx(0.2) and composite["ci95"] == pytest.approx(12.706 * 0.989949 / 2**0.5, rel=1e-5)
    component = _diff("component:service", [0.9, -0.5])
    assert component["low"] == pytest.approx(0.2 - 12.706 * 0.989949 / 2**0.5, rel=1e-5)
    assert _diff("passed", [1.0])["low"] is None  # one pair: no interval
