"""Black-Scholes against textbook values, put-call parity, implied-vol round trips, greeks, and QuantLib."""

from __future__ import annotations

import math

import numpy as np
import pytest

from environments.optionsdesk.chain import listed, quotes
from environments.optionsdesk.market import market_for
from environments.optionsdesk.pricing import black_scholes, greeks, implied_vol, strike_for_delta, surface_vol


def _n(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def test_it_gives_the_textbook_at_the_money_value() -> None:
    # S = K = 100, T = 1, sigma = 20%, r = 0: d1 = 0.1, d2 = -0.1, C = 100 (N(0.1) - N(-0.1)) = 7.965567.
    assert float(black_scholes(spot=100.0, strike=100.0, years=1.0, vol=0.2, call=True)) == pytest.approx(7.965567, abs=1e-6)
    assert float(black_scholes(spot=100.0, strike=100.0, years=1.0, vol=0.2, call=False)) == pytest.approx(7.965567, abs=1e-6)


def test_it_matches_the_closed_form_written_out_by_hand() -> None:
    s, k, t, v = 100.0, 110.0, 0.5, 0.3
    d1 = (math.log(s / k) + 0.5 * v * v * t) / (v * math.sqrt(t))
    d2 = d1 - v * math.sqrt(t)
    call = s * _n(d1) - k * _n(d2)  # d1 = -0.34323, d2 = -0.55536: 36.571 - 31.825 = 4.7457 (r = 0)
    assert float(black_scholes(spot=s, strike=k, years=t, vol=v, call=True)) == pytest.approx(call, abs=1e-9)
    assert call == pytest.approx(4.7457, abs=1e-4)


def test_an_expired_option_is_worth_its_intrinsic_value() -> None:
    assert float(black_scholes(spot=105.0, strike=100.0, years=0.0, vol=0.2, call=True)) == 5.0
    assert float(black_scholes(spot=105.0, strike=100.0, years=0.0, vol=0.2, call=False)) == 0.0


def test_the_whole_chain_keeps_put_call_parity() -> None:
    market = market_for(11)
    day = 60
    rows = {r["contract"]: r for r in quotes(market, day, listed(market, day, "ALPH"))}
    spot = float(market.close[day, market.index("ALPH")])
    pairs = [(r, rows[r["contract"].replace("-C", "-P")]) for r in rows.values() if r["type"] == "call"]
    assert len(pairs) > 100
    for call, put in pairs:  # C - P = S - K at zero rates; mids are rounded to 4 decimals
        assert call["mid"] - put["mid"] == pytest.approx(spot - call["strike"], abs=2e-4)


def test_implied_vol_recovers_the_vol_that_priced_the_option() -> None:
    for strike, years, vol, call in ((90.0, 0.1, 0.35, False), (100.0, 1.0, 0.2, True), (125.0, 0.25, 0.6, True)):
        price = float(black_scholes(spot=100.0, strike=strike, years=years, vol=vol, call=call))
        assert implied_vol(price=price, spot=100.0, strike=strike, years=years, call=call) == pytest.approx(vol, abs=1e-8)
    assert math.isnan(implied_vol(price=0.5, spot=100.0, strike=90.0, years=0.5, call=True))  # below intrinsic


def test_greeks_agree_with_finite_differences() -> None:
    args = {"strike": 105.0, "years": 0.3, "vol": 0.25, "call": True}
    g = greeks(spot=100.0, **args)
    h = 1e-3
    up, down = (float(black_scholes(spot=100.0 + d, **args)) for d in (h, -h))
    assert float(g["delta"]) == pytest.approx((up - down) / (2 * h), abs=1e-6)
    assert float(g["gamma"]) == pytest.approx((up - 2 * float(black_scholes(spot=100.0, **args)) + down) / h**2, abs=1e-4)
    bumped = float(black_scholes(spot=100.0, strike=105.0, years=0.3, vol=0.25 + h, call=True))
    assert float(g["vega"]) == pytest.approx((bumped - float(black_scholes(spot=100.0, **args))) / h, rel=1e-3)


def test_strike_for_delta_finds_the_quarter_delta_call() -> None:
    strike = strike_for_delta(target=0.25, spot=100.0, years=0.25, vol_at=lambda k: 0.2, call=True)
    assert float(greeks(spot=100.0, strike=strike, years=0.25, vol=0.2, call=True)["delta"]) == pytest.approx(0.25, abs=1e-6)
    assert strike > 100.0


def test_strike_for_delta_falls_back_to_the_nearer_end_when_the_surface_never_reaches_the_target() -> None:
    # at 500% vol a one-year call keeps |delta| 0.99 even at four times the spot: the root is not bracketed
    assert strike_for_delta(target=0.10, spot=100.0, years=1.0, vol_at=lambda k: 5.0, call=True) == 400.0


def test_the_surface_has_skew_and_a_term_structure() -> None:
    at = {k: float(surface_vol(atm=0.3, long_run=0.2, skew=0.2, spot=100.0, strike=k, years=0.1)) for k in (90.0, 100.0, 110.0)}
    assert at[90.0] > at[100.0] > at[110.0]  # puts dearer than calls
    near, far = (float(surface_vol(atm=0.3, long_run=0.2, skew=0.2, spot=100.0, strike=100.0, years=t)) for t in (0.02, 1.0))
    assert near > far > 0.2  # inverted after a shock, toward the long-run level


def test_total_variance_grows_with_maturity_even_after_a_crash() -> None:
    years = np.linspace(1 / 252, 2.0, 400)
    for atm, long_run in ((0.9, 0.15), (0.1, 0.3)):  # steeply inverted, and upward sloping
        vol = surface_vol(atm=atm, long_run=long_run, skew=0.2, spot=100.0, strike=100.0, years=years)
        assert np.all(np.diff(vol**2 * years) > 0)
    # at the money, w(T) = lr^2 T + (atm^2 - lr^2) tau (1 - exp(-T / tau)) by hand at T = 0.5, tau = 0.25
    w = 0.2**2 * 0.5 + (0.6**2 - 0.2**2) * 0.25 * (1 - math.exp(-2.0))
    assert float(surface_vol(atm=0.6, long_run=0.2, skew=0.2, spot=100.0, strike=100.0, years=0.5)) == pytest.approx(math.sqrt(w / 0.5))


def test_it_agrees_with_quantlib() -> None:
    ql = pytest.importorskip("QuantLib")  # a dev-only dependency: the cross-check is skipped where it is absent
    today = ql.Date(1, 1, 2030)
    ql.Settings.instance().evaluationDate = today
    day_count = ql.Actual365Fixed()
    for strike, days, vol, call in ((95.0, 73, 0.22, True), (105.0, 365, 0.35, False), (100.0, 30, 0.5, True)):
        expiry = today + days
        payoff = ql.PlainVanillaPayoff(ql.Option.Call if call else ql.Option.Put, strike)
        option = ql.VanillaOption(payoff, ql.EuropeanExercise(expiry))
        flat = ql.YieldTermStructureHandle(ql.FlatForward(today, 0.0, day_count))
        process = ql.BlackScholesMertonProcess(
            ql.QuoteHandle(ql.SimpleQuote(100.0)),
            flat,
            flat,
            ql.BlackVolTermStructureHandle(ql.BlackConstantVol(today, ql.NullCalendar(), vol, day_count)),
        )
        option.setPricingEngine(ql.AnalyticEuropeanEngine(process))
        ours = black_scholes(spot=100.0, strike=strike, years=days / 365.0, vol=vol, call=call)
        assert float(ours) == pytest.approx(option.NPV(), abs=1e-9)
        assert float(greeks(spot=100.0, strike=strike, years=days / 365.0, vol=vol, call=call)["delta"]) == pytest.approx(
            option.delta(), abs=1e-9
        )
    assert np.isfinite(ours)
