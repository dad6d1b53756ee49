"""Black–Scholes on an implied-volatility surface: prices, greeks, implied vol and the surface itself.

    black_scholes(spot=100, strike=100, years=1, vol=0.2, call=True)   # 7.9656 (zero rates, no dividends)
    implied_vol(price=7.9656, spot=100, strike=100, years=1, call=True) # 0.2, by scipy's brentq

Rates and dividends are zero throughout the desk (documented in README.md), so the forward is the spot and
put–call parity reads C - P = S - K. Every function takes numpy arrays or floats and is vectorised: the normal
CDF is scipy.special.ndtr (scipy.stats.norm.cdf is the same function behind a slower wrapper, and a step
prices a whole position book), the density is scipy.stats.norm's formula via ndtr's companion.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

YEAR_DAYS = 252  # trading days per year: option time and the Sharpe ratio's annualisation both use it
MIN_YEARS = 1e-6  # below this an option is worth its intrinsic value
_SQRT_2PI = math.sqrt(2.0 * math.pi)

Num = Any  # float or np.ndarray: the functions broadcast


def _pdf(x: Num) -> Num:
    return np.exp(-0.5 * np.square(x)) / _SQRT_2PI


def _d1_d2(spot: Num, strike: Num, years: Num, vol: Num) -> tuple[Num, Num]:
    t = np.maximum(years, MIN_YEARS)
    root = vol * np.sqrt(t)
    d1 = (np.log(spot / strike) + 0.5 * vol * vol * t) / root
    return d1, d1 - root


def black_scholes(*, spot: Num, strike: Num, years: Num, vol: Num, call: Num) -> Num:
    """The option's value per share; `call` is a bool (or bool array). At expiry: the intrinsic value."""
    d1, d2 = _d1_d2(spot, strike, years, vol)
    call_value = spot * ndtr(d1) - strike * ndtr(d2)
    value = np.where(call, call_value, call_value - spot + strike)  # parity: P = C - S + K at zero rates
    intrinsic = np.where(call, np.maximum(spot - strike, 0.0), np.maximum(strike - spot, 0.0))
    return np.where(np.asarray(years) <= MIN_YEARS, intrinsic, value)


def greeks(*, spot: Num, strike: Num, years: Num, vol: Num, call: Num) -> dict[str, Num]:
    """Per share: delta, gamma, vega (per 1.00 of vol), theta (per trading day, negative for a long option)."""
    t = np.maximum(years, MIN_YEARS)
    d1, _ = _d1_d2(spot, strike, t, vol)
    density = _pdf(d1)
    delta = np.where(call, ndtr(d1), ndtr(d1) - 1.0)
    gamma = density / (spot * vol * np.sqrt(t))
    vega = spot * density * np.sqrt(t)
    theta = -spot * density * vol / (2.0 * np.sqrt(t)) / YEAR_DAYS
    return {"delta": delta, "gamma": gamma, "vega": vega, "theta": theta}


def implied_vol(*, price: float, spot: float, strike: float, years: float, call: bool) -> float:
    """The vol at which Black–Scholes gives `price`, by brentq on [0.1%, 500%]; NaN outside the no-arbitrage band."""
    intrinsic = max(spot - strike, 0.0) if call else max(strike - spot, 0.0)
    upper = spot if call else strike
    if years <= MIN_YEARS or not intrinsic < price < upper:
        return float("nan")

    def gap(vol: float) -> float:
        return float(black_scholes(spot=spot, strike=strike, years=years, vol=vol, call=call)) - price

    return float(brentq(gap, 1e-3, 5.0, xtol=1e-10))


def strike_for_delta(*, target: float, spot: float, years: float, vol_at: Any, call: bool) -> float:
    """The strike whose |delta| is `target` (0 < target < 1) on the surface `vol_at(strike)`, by brentq.

    |delta| falls with the strike for a call and rises for a put, so the root is bracketed on [spot/4, spot*4]
    for any sane surface; when it is not, the end of that range nearer the target is returned."""
    assert 0.0 < target < 1.0, f"delta target {target} outside (0, 1)"

    def gap(strike: float) -> float:
        d = greeks(spot=spot, strike=strike, years=years, vol=vol_at(strike), call=call)["delta"]
        return abs(float(d)) - target

    low, high = spot / 4.0, spot * 4.0
    at_low, at_high = gap(low), gap(high)
    if at_low * at_high > 0:  # a wild surface (a crash's wings) never reaches the target: the nearer end
        return low if abs(at_low) < abs(at_high) else high
    return float(brentq(gap, low, high, xtol=1e-6))


def surface_vol(*, atm: Num, long_run: Num, skew: Num, spot: Num, strike: Num, years: Num) -> Num:
    """The desk's implied-vol surface at one instant.

    Term structure: the variance a mean-reverting process is expected to accumulate, from today's `atm` level
    toward `long_run` with a 0.25-year time constant: total variance w(T) = lr^2 T + (atm^2 - lr^2) tau (1 - e^(-T/tau)),
    so w grows with T however inverted the curve is (no calendar arbitrage at the money), and the at-the-money
    vol sqrt(w / T) slopes down after a shock and up when calm. Skew: vol rises as the strike falls, linearly
    in log-moneyness scaled by 1/sqrt(T) (the sticky-delta shape), plus a small smile curvature. Clipped to
    [5%, 3x the level] so that far wings of a days-old option stay finite."""
    t = np.maximum(years, 1.0 / YEAR_DAYS)
    tau = 0.25
    level = np.sqrt(long_run**2 + (atm**2 - long_run**2) * tau * (1.0 - np.exp(-t / tau)) / t)
    k = np.log(strike / spot) / np.sqrt(t)
    return np.clip(level * (1.0 - skew * k + 0.15 * k * k), 0.05, 3.0 * level)
