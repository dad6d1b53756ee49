"""The resolver's rules, one by one: expiry choice, strikes, the legs of each strategy, sizing by risk budget."""

from __future__ import annotations

import math

import pytest

from environments.optionsdesk.book import scenario_pnl
from environments.optionsdesk.chain import Contract, expiries, parse_contract, quotes, strikes
from environments.optionsdesk.market import market_for
from environments.optionsdesk.resolver import STRATEGIES, Request, ResolveError, atm_strike, pick_expiry, resolve, unit_legs, wing

MARKET = market_for(3)
DAY = 30


def test_expiries_are_the_next_two_weeklies_and_six_monthlies() -> None:
    assert expiries(30) == [34, 39, 41, 62, 83, 104, 125, 146]


def test_it_picks_the_expiry_closest_to_the_bucket_with_ties_to_the_earlier() -> None:
    assert pick_expiry(30, "week") == 34  # target 35
    assert pick_expiry(30, "month") == 41  # target 51: 41 and 62 are 10 and 11 away
    assert pick_expiry(30, "quarter") == 83  # target 93
    assert pick_expiry(33, "week") == 39  # 34 expires in one day: never within MIN_DTE


def test_at_the_money_is_the_nearest_strike_ties_to_the_lower() -> None:
    assert atm_strike([95.0, 100.0, 105.0], 102.4) == 100.0
    assert atm_strike([95.0, 100.0, 105.0], 102.5) == 100.0
    assert atm_strike([95.0, 100.0, 105.0], 102.6) == 105.0


def test_a_wing_sits_as_far_beyond_as_the_short_strike_is_from_the_money() -> None:
    grid = [float(k) for k in range(80, 121)]
    assert wing(grid, 95.0, 100.0) == 90.0
    assert wing(grid, 110.0, 100.0) == 120.0
    assert wing(grid, 100.0, 99.0) == 102.0  # at least two steps


def _legs(strategy: str, **kw: str) -> list[tuple[Contract | str, int]]:
    return unit_legs(MARKET, DAY, Request("IDX", strategy, **kw))


def test_an_iron_condor_is_long_wings_around_a_short_strangle() -> None:
    (wp, qa), (sp, qb), (sc, qc), (wc, qd) = _legs("iron_condor")
    assert isinstance(wp, Contract) and isinstance(sp, Contract) and isinstance(sc, Contract) and isinstance(wc, Contract)
    atm = atm_strike(strikes(MARKET, DAY, 0), float(MARKET.close[DAY, 0]))
    assert wp.strike < sp.strike < atm < sc.strike < wc.strike
    assert (qa, qb, qc, qd) == (1, -1, -1, 1)
    assert not wp.call and not sp.call and sc.call and wc.call
    assert {c.expiry for c in (wp, sp, sc, wc)} == {41}


def test_out_of_the_money_strikes_follow_the_delta_target() -> None:
    near, far = (_legs("short_strangle", moneyness=m)[0][0] for m in ("near", "far"))
    assert isinstance(near, Contract) and isinstance(far, Contract)
    assert near.call and far.call and near.strike < far.strike
    deltas = {r["contract"]: abs(r["delta"]) for r in quotes(MARKET, DAY, [near, far])}
    step = float(MARKET.strike_step[0])
    assert deltas[near.id] == pytest.approx(0.40, abs=0.12) and deltas[far.id] == pytest.approx(0.10, abs=0.08)
    assert far.strike - near.strike >= step


def test_a_butterfly_sells_two_at_the_money_calls_between_equidistant_wings() -> None:
    (low, a), (mid, b), (high, c) = _legs("long_butterfly")
    assert isinstance(low, Contract) and isinstance(mid, Contract) and isinstance(high, Contract)
    assert (a, b, c) == (1, -2, 1) and mid.strike - low.strike == pytest.approx(high.strike - mid.strike)


def test_a_calendar_sells_near_and_buys_far_at_the_same_strike() -> None:
    (near, a), (far, b) = _legs("calendar")
    assert isinstance(near, Contract) and isinstance(far, Contract)
    assert (a, b) == (-1, 1) and near.strike == far.strike and far.expiry >= near.expiry + 15


def test_covered_call_and_protective_put_hold_a_hundred_shares_per_unit() -> None:
    assert _legs("covered_call")[0] == ("IDX", 100) and _legs("covered_call")[1][1] == -1
    assert _legs("protective_put")[0] == ("IDX", 100) and _legs("protective_put")[1][1] == 1


def test_units_are_the_budget_over_one_units_risk_rounded_down() -> None:
    plan = resolve(MARKET, DAY, 1_000_000.0, Request("IDX", "bull_call_spread", risk_budget=0.02))
    assert plan.units == math.floor(20_000.0 / plan.risk_per_unit)
    assert plan.budget == 20_000.0
    # A debit spread's worst case is what it cost: the long call's ask minus the short call's bid, per 100 shares, plus fees.
    long, short = plan.legs
    assert plan.risk_per_unit == pytest.approx((long.price - short.price) * 100 + 2 * 0.65, abs=0.02)
    assert -scenario_pnl(MARKET, DAY, list(plan.legs), horizon=11).min() <= 20_000.0


def test_every_strategy_resolves_and_is_deterministic() -> None:
    for strategy in STRATEGIES:
        for underlying in ("IDX", "BRCK"):
            request = Request(underlying, strategy, risk_budget=0.1)
            first, second = resolve(MARKET, DAY, 1_000_000.0, request), resolve(MARKET, DAY, 1_000_000.0, request)
            assert first == second and first.units >= 1
            assert all(
                leg.instrument == underlying or (parse_contract(leg.instrument) or Contract("", 0, True, 0)).symbol == underlying
                for leg in first.legs
            )


def test_a_budget_below_one_unit_is_refused_with_the_numbers() -> None:
    with pytest.raises(ResolveError, match=r"one unit of short_straddle on IDX risks \$[\d,]+\.\d\d; the budget is \$1,000\.00"):
        resolve(MARKET, DAY, 1_000_000.0, Request("IDX", "short_straddle", risk_budget=0.001))
