"""Evaluation statistics against values computed by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lab.rollouts.aggregate import mean_ci, paired, pass_hat_k, summarize, t_critical_95


def _row(task: str, seed: int, composite: float, passed: bool, reason: str = "horizon_reached") -> dict:
    return {"task": task, "seed": seed, "composite": composite, "passed": passed, "termination_reason": reason}


ROWS = [
    _row("alpha", 0, 0.2, False),
    _row("alpha", 1, 0.4, True),
    _row("alpha", 2, 0.6, True),
    _row("beta", 0, 0.8, True),
    _row("beta", 1, 1.0, True),
    _row("beta", 2, 0.0, False, "bankrupt"),
]


def test_mean_and_95_percent_interval_by_hand() -> None:
    # values 0.2 0.4 0.6 0.8 1.0 0.0: mean 0.5; squared deviations .09 .01 .01 .09 .25 .25 = .70; sd = sqrt(.70/5) = .374166
    # half width = t(5) 2.571 * .374166 / sqrt(6) = .392737
    ci = mean_ci([0.2, 0.4, 0.6, 0.8, 1.0, 0.0])
    assert ci["mean"] == pytest.approx(0.5)
    assert ci["sd"] == pytest.approx(math.sqrt(0.14))
    assert (ci["low"], ci["high"]) == (pytest.approx(0.5 - 0.392727, abs=1e-6), pytest.approx(0.5 + 0.392727, abs=1e-6))
    assert mean_ci([0.7]) == {"n": 1, "mean": 0.7, "sd": None, "low": None, "high": None}
    assert mean_ci([])["mean"] is None


def test_t_critical_values_match_the_tables_beyond_thirty() -> None:
    assert t_critical_95(1) == 12.706 and t_critical_95(30) == 2.042
    assert t_critical_95(40) == pytest.approx(2.021, abs=5e-4)
    assert t_critical_95(120) == pytest.approx(1.980, abs=5e-4)


def test_pass_hat_k_by_hand() -> None:
    # alpha passes 2 of 3, beta 2 of 3. pass^1 = 2/3; pass^2 = C(2,2)/C(3,2) = 1/3; pass^3 = 0
    passes = {"alpha": [False, True, True], "beta": [True, True, False], "short": [True]}
    assert pass_hat_k(passes, 1) == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert pass_hat_k(passes, 2) == pytest.approx(1 / 3)  # "short" has fewer than 2 seeds: left out
    assert pass_hat_k(passes, 3) == 0.0
    assert pass_hat_k(passes, 4) is None


def test_summary_of_fixed_episodes() -> None:
    summary = summarize(ROWS)
    assert summary["episodes"] == 6 and summary["pass_rate"] == pytest.approx(4 / 6)
    assert summary["composite"]["mean"] == pytest.approx(0.5)
    assert summary["pass_hat_k"] == {"1": pytest.approx(2 / 3), "2": pytest.approx(1 / 3), "3": 0.0}
    assert summary["termination_reasons"] == {"bankrupt": 1, "horizon_reached": 5}
    alpha, beta = summary["per_task"]
    # alpha: .2 .4 .6 -> mean .4, sd .2, half = 4.303 * .2 / sqrt(3) = .496867
    assert (alpha["task"], alpha["n"], alpha["pass_rate"]) == ("alpha", 3, pytest.approx(2 / 3))
    assert alpha["composite"]["mean"] == pytest.approx(0.4) and alpha["composite"]["high"] == pytest.approx(0.4 + 0.496867, abs=1e-6)
    assert beta["composite"]["mean"] == pytest.approx(0.6)


def test_paired_comparison_by_hand() -> None:
    other = [
        _row("alpha", 0, 0.1, False),
        _row("alpha", 1, 0.1, False),
        _row("alpha", 2, 0.6, True),
        _row("beta", 0, 0.5, True),
        _row("beta", 1, 0.8, True),
        _row("gamma", 0, 0.3, False),
    ]
    result = paired(ROWS, other)
    # pairs: alpha0 .1, alpha1 .3, alpha2 0, beta0 .3, beta1 .2 -> mean .18; deviations -.08 .12 -.18 .12 .02,
    # squares .0064 .0144 .0324 .0144 .0004 = .068; sd = sqrt(.017); half = 2.776 * sqrt(.017) / sqrt(5)
    assert result["pairs"] == 5 and result["unpaired"] == 2  # beta seed 2 and gamma have no partner
    assert result["composite_diff"]["mean"] == pytest.approx(0.18)
    assert result["composite_diff"]["low"] == pytest.approx(0.18 - 2.776 * math.sqrt(0.017) / math.sqrt(5))
    assert (result["wins"], result["losses"], result["ties"]) == (4, 0, 1)
    assert result["pass_rate_diff"]["mean"] == pytest.approx(1 / 5)  # alpha seed 1 passed only in A
    assert result["per_task"] == [
        {"task": "alpha", "n": 3, "composite_diff": pytest.approx(0.4 / 3)},
        {"task": "beta", "n": 2, "composite_diff": pytest.approx(0.25)},
    ]


def test_role_stats_average_each_role_per_episode_and_tabulate_success_by_consultations() -> None:
    from lab.rollouts.aggregate import role_stats

    def row(passed: bool, composite: float, consults: int, critic_turns: int | None) -> dict[str, Any]:
        roles: dict[str, Any] = {
            "actor": {"turns": 10, "tokens": 100, "cost": 0.0},
            "consultant": {"turns": consults, "tokens": 0, "cost": 0.02 * consults, "calls": consults},
        }
        if critic_turns is not None:
            roles["critic"] = {"turns": critic_turns, "tokens": 40, "cost": 0.0}
        return {"task": "t", "seed": 0, "composite": composite, "passed": passed, "roles": roles}

    rows = [
        row(True, 0.9, 2, 3),
        row(False, 0.3, 0, None),
        row(True, 0.8, 2, 1),
        {"task": "t", "seed": 3, "composite": 0.5, "passed": False},
    ]
    stats = role_stats(rows)
    assert stats["roles"]["actor"] == {"episodes": 3, "turns": 7.5, "tokens": 75.0, "cost": 0.0}
    assert stats["roles"]["critic"] == {"episodes": 2, "turns": 1.0, "tokens": 20.0, "cost": 0.0}
    assert stats["roles"]["consultant"]["cost"] == pytest.approx(0.02)
    assert stats["consultations"]["mean"] == 1.0 and stats["consultations"]["n"] == 4
    assert stats["success_by_consultations"] == [
        {"consultations": 0, "episodes": 2, "pass_rate": 0.0, "composite": pytest.approx(0.4)},
        {"consultations": 2, "episodes": 2, "pass_rate": 1.0, "composite": pytest.approx(0.85)},
    ]
    assert role_stats([])["roles"] == {} and role_stats([])["success_by_consultations"] == []


def test_intervals_stay_inside_what_they_estimate_and_carry_their_n_at_two_seeds() -> None:
    # composites .1 and .9: mean .5, sd .565685, t(1) = 12.706: ± 5.08, so the plain t-interval was [-4.58, 5.58]
    summary = summarize([_row("alpha", 0, 0.1, False), _row("alpha", 1, 0.9, True)])
    assert summary["composite"] == {"n": 2, "mean": pytest.approx(0.5), "sd": pytest.approx(0.565685, abs=1e-6), "low": 0.0, "high": 1.0}
    # Wilson for 1 of 2: centre (.5 + 1.9208 / 2) / (1 + 1.9208) = .5; half 1.96 * sqrt(.125 + .2401) / 2.9208 = .405469
    wilson = {"n": 2, "rate": 0.5, "low": pytest.approx(0.094531, abs=1e-5), "high": pytest.approx(0.905469, abs=1e-5)}
    assert summary["pass_interval"] == wilson and summary["per_task"][0]["pass_interval"] == wilson
    # paired differences .8 and -.6 (in [-1, 1]): mean .1, t half-width 8.9; clipped to the range of a difference
    diff = paired([_row("alpha", 0, 0.9, True), _row("alpha", 1, 0.1, False)], [_row("alpha", 0, 0.1, False), _row("alpha", 1, 0.7, True)])
    assert (diff["composite_diff"]["low"], diff["composite_diff"]["high"], diff["composite_diff"]["n"]) == (-1.0, 1.0, 2)
    assert (diff["pass_rate_diff"]["low"], diff["pass_rate_diff"]["high"]) == (-1.0, 1.0)
