"""Risk probes inside the options desk: decisions with explicit stakes over the desk's own resources.

    env = make("optionsdesk/probe-insurance", seed=1003)   # buy a protective put for the desk's index position?
    env = make("optionsdesk/probe-deal", seed=1003)        # a certain share, or trade the risky spread yourself?

One decision per episode (the env's `probe` option, env.py), on a day of the seed's out-of-sample period, priced
from that day's chain. The desk's reads work as on any day (the chain shows the quoted puts), trading is closed, and
riskprobe's `choose` tool takes the decision: its options are environments.riskprobe Probes (lotteries of changes in
credits), so the choices feed environments/riskprobe/fit.py and riskprobe's CARA anchors unchanged. Stakes are counted in credits of
DOLLARS_PER_CREDIT dollars: the desk's $1,000,000 is 10,000 credits and the stakes are hundreds to a few thousand
credits, the riskprobe's scale, so an `a` per credit means the same in both (a = 0.002 per credit = 0.00002 per $).

insurance  The desk is long `n` IDX shares (a fifth to a half of its capital). Its stress model states a chance p
           that IDX falls to S_down by the month expiry, else it stays flat. none: bear it | partial: buy the put
           struck about half-way down | full: buy the at-the-money put; each put at the chain's ask plus fees.
           S_down is set so the full put's premium is `loading` (0.7-2.5) times the unhedged expected loss, as the
           riskprobe's insurance is drawn: the indifference points spread from risk seeking to strongly averse.
deal       The resolver sizes a month bull call spread on IDX at a risk budget (2-10% of equity), priced from the
           chain. It pays the spread's width less the debit if IDX ends above the upper strike, with the chance the
           desk's model states (0.3-0.8: the edge the desk believes it has; at market odds the spread is worth
           less than its debit and every probe would be easy), and loses the debit otherwise (the payoffs in
           between are left out: stated). deal: a counterparty takes the trade and pays a certain share instead,
           0.3-1.1 times the gamble's expected value (at least 5% of the win), as the riskprobe's deal is drawn.
"""

from __future__ import annotations

import random

from environments.optionsdesk.book import OPTION_FEE
from environments.optionsdesk.chain import MULTIPLIER, Contract, parse_contract, quotes, strikes
from environments.optionsdesk.market import market_for
from environments.optionsdesk.resolver import Request, pick_expiry, resolve
from environments.optionsdesk.world import CAPITAL, PERIODS
from environments.riskprobe.cara import Lottery, check_lottery
from environments.riskprobe.probes import OPTION_NAMES, Probe

DOLLARS_PER_CREDIT = 100
PROBE_FAMILIES = ("insurance", "deal")
INDEX = "IDX"
LAST_PROBE_DAY_BEFORE_END = 25  # a month expiry after the probe day stays inside the generated history


def credits(dollars: float) -> float:
    return float(round(dollars / DOLLARS_PER_CREDIT))


def _stream(family: str, seed: int) -> random.Random:
    assert family in PROBE_FAMILIES, f"unknown desk probe family {family!r}; one of {PROBE_FAMILIES}"
    return random.Random(f"optionsdesk/probe/{family}/{seed}")


def probe_day(family: str, seed: int) -> int:
    """The out-of-sample day the decision is asked on (the stream's first draw)."""
    first, last = PERIODS["oos"]
    return first + _stream(family, seed).randrange(0, last - first - LAST_PROBE_DAY_BEFORE_END)


def desk_probe(family: str, seed: int) -> Probe:
    """The family's decision on history `seed` (a pure function of both)."""
    rng = _stream(family, seed)
    first, last = PERIODS["oos"]
    day = first + rng.randrange(0, last - first - LAST_PROBE_DAY_BEFORE_END)
    options, preamble = (_insurance if family == "insurance" else _deal)(seed, day, rng)
    for _, lottery in options:
        check_lottery(lottery)
    assert tuple(n for n, _ in options) == OPTION_NAMES[family], f"{family}: options out of order"
    return Probe(family=family, resources=int(credits(CAPITAL)), options=options, preamble=preamble)


def _put_cost(seed: int, day: int, expiry: int, strike: float, shares: int) -> tuple[float, float]:
    """(ask per share, total dollars with fees) of puts covering `shares`."""
    ask = float(quotes(market_for(seed), day, [Contract(INDEX, expiry, False, strike)])[0]["ask"])
    contracts = shares // MULTIPLIER
    return ask, ask * shares + OPTION_FEE * contracts


def _insurance(seed: int, day: int, rng: random.Random) -> tuple[tuple[tuple[str, Lottery], ...], str]:
    market = market_for(seed)
    i = market.index(INDEX)
    spot, expiry = float(market.close[day, i]), pick_expiry(day, "month")
    shares = MULTIPLIER * max(1, round(rng.choice((0.2, 0.35, 0.5)) * CAPITAL / spot / MULTIPLIER))
    p, loading = rng.choice((0.05, 0.1, 0.2, 0.3)), rng.uniform(0.7, 2.5)
    grid = [k for k in strikes(market, day, i) if k <= spot]
    full_k = max(grid)
    full_ask, full_cost = _put_cost(seed, day, expiry, full_k, shares)
    drop = min(full_cost / (p * loading) / shares, 0.4 * spot)  # S - S_down: premium = loading x expected loss
    down = spot - drop
    partial_k = min(grid, key=lambda k: (abs(k - (spot + down) / 2), k))
    partial_ask, partial_cost = _put_cost(seed, day, expiry, partial_k, shares)
    q = round(1 - p, 10)

    def hedged(cost: float, strike: float) -> Lottery:  # flat: the put (struck at or below spot) expires worthless
        return ((p, -credits(cost + shares * (spot - max(down, strike)))), (q, -credits(cost)))

    options = (
        ("none", ((p, -credits(shares * drop)), (q, 0.0))),
        ("partial", hedged(partial_cost, partial_k)),
        ("full", hedged(full_cost, full_k)),
    )
    preamble = (
        f"1 credit is ${DOLLARS_PER_CREDIT}. On day {day} your desk is long {shares:,} {INDEX} shares at {spot:.2f}. Its stress "
        f"model gives a {round(p * 100)}% chance that {INDEX} falls to {down:.2f} by day {expiry}, else it stays flat. "
        f"Puts expiring on day {expiry}: strike {partial_k:g} at {partial_ask:.2f} (partial), strike {full_k:g} at "
        f"{full_ask:.2f} (full), per share, plus ${OPTION_FEE} a contract."
    )
    return options, preamble


def _deal(seed: int, day: int, rng: random.Random) -> tuple[tuple[tuple[str, Lottery], ...], str]:
    market = market_for(seed)
    i = market.index(INDEX)
    spot = float(market.close[day, i])
    budget = rng.choice((0.02, 0.05, 0.1))
    plan = resolve(market, day, CAPITAL, Request(INDEX, "bull_call_spread", "month", "mid", budget))
    long_leg, short_leg = sorted(plan.legs, key=lambda leg: -leg.quantity)
    low, high = parse_contract(long_leg.instrument), parse_contract(short_leg.instrument)
    assert low is not None and high is not None, f"a call spread has two option legs, got {plan.legs}"
    low_k, high_k, expiry = low.strike, high.strike, low.expiry
    contracts = long_leg.quantity
    debit = (long_leg.price - short_leg.price) * contracts * MULTIPLIER + 2 * OPTION_FEE * contracts
    win = (high_k - low_k) * contracts * MULTIPLIER - debit
    p = rng.choice((0.3, 0.4, 0.5, 0.6, 0.7, 0.8))  # the desk's view, not the market's: the edge it believes it has
    expected = p * credits(win) - (1 - p) * credits(debit)
    share = max(5.0, float(5 * round(max(expected, 0.05 * credits(win)) * rng.uniform(0.3, 1.1) / 5)))
    options = (
        ("deal", ((1.0, share),)),
        ("gamble", ((p, credits(win)), (round(1 - p, 10), -credits(debit)))),
    )
    preamble = (
        f"1 credit is ${DOLLARS_PER_CREDIT}. On day {day} your desk can buy {contracts} {INDEX} {low_k:g}/{high_k:g} call spreads "
        f"expiring on day {expiry} (IDX at {spot:.2f}) for a debit of ${debit:,.0f} with fees; the desk's model gives a "
        f"{round(p * 100)}% chance that {INDEX} ends above {high_k:g}, when the spread pays ${win:,.0f} net (in between "
        f"counted as a loss). A counterparty offers to take the trade and pay the desk a certain {share:g} credits instead."
    )
    return options, preamble


def draw_outcome(lottery: Lottery, draw: float) -> float:
    """The lottery's outcome for a uniform draw in [0, 1): outcomes in order, by cumulative probability."""
    outcome, cumulative = lottery[-1][1], 0.0
    for p, x in lottery:
        cumulative += p
        if draw < cumulative:
            return x
    return outcome
