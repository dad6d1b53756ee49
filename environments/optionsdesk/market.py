"""One seeded market history: an index and four stocks, with regimes, stochastic volatility, earnings and news.

    market = market_for(seed)                  # cached and read-only: every episode of a seed shares it
    market.close[day, i], market.vol[day, i]   # closing price and the instantaneous annual vol (known at `day`)

Generation is causal. Every random draw of day d is made up front (`_draws`), and day d's state is computed
from day d-1's state and day d's draws only; news published on day d moves prices from day d+1 on, through
the drift it carries. So replacing the draws after day t (`market_for(seed, future_seed=..., after=t)`)
changes nothing on or before day t: the no-look-ahead test rests on this.

Regimes (calm, trending, volatile, crash) are a Markov chain on the index; each sets the index's drift and the
vol its log-vol reverts to. Stocks load on the index by their beta, carry their own vol and jump on earnings
days (a public schedule; the jump is not). News: headlines about a stock, from a source whose reliability
varies; an informative one says which way the stock will drift over the next days, a misleading one says the
opposite of what happens, noise moves nothing.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

SYMBOLS: tuple[str, ...] = ("IDX", "ALPH", "BRCK", "CYPR", "DELT")  # the index first
REGIMES: tuple[str, ...] = ("calm", "trending", "volatile", "crash")
DAYS = 266  # trading days in one history: warm-up, then the train, validation and out-of-sample periods
# Annual vol each regime pulls the index toward, its daily drift, and the chance of staying in it each day.
_TARGET_VOL = np.array([0.12, 0.16, 0.30, 0.65])
_DRIFT = np.array([0.0004, 0.0012, -0.0002, -0.012])
_TRANSITION = np.array(
    [  # from row to column: calm, trending, volatile, crash
        [0.965, 0.020, 0.013, 0.002],
        [0.025, 0.960, 0.013, 0.002],
        [0.030, 0.020, 0.940, 0.010],
        [0.000, 0.000, 0.350, 0.650],
    ]
)
EARNINGS_EVERY = 63  # a stock reports once a quarter
NEWS_RATE = 0.07  # chance a stock is in the news on a given day
SOURCES: dict[str, tuple[float, float, float]] = {  # P(informative), P(noise), P(misleading) per source
    "Wire": (0.75, 0.20, 0.05),
    "Analyst note": (0.50, 0.30, 0.20),
    "Forum": (0.20, 0.45, 0.35),
}
_UP = ("{s} wins a large contract, people familiar say", "Demand for {s}'s products picks up", "{s} guidance likely raised")
_DOWN = ("{s} loses a key customer, people familiar say", "Regulator looks into {s}", "{s} supply problems deepen")
NEWS_DRIFT = 0.006  # daily drift an informative (or misleading) headline adds, for 3-7 days


@dataclass(frozen=True)
class Headline:
    day: int
    symbol: str
    source: str
    text: str
    kind: str  # informative | noise | misleading: hidden from agents, kept for analysis and the oracle


@dataclass(frozen=True)
class Market:
    seed: int
    close: np.ndarray  # (DAYS, 5) closing prices
    vol: np.ndarray  # (DAYS, 5) instantaneous annual vol, known on its day
    regime: np.ndarray  # (DAYS,) index into REGIMES
    long_run_vol: np.ndarray  # (5,) where each term structure ends
    skew: np.ndarray  # (5,) surface skew
    jump_sd: np.ndarray  # (5,) sd of the earnings-day log jump (0 for the index)
    earnings: tuple[tuple[int, ...], ...]  # per symbol, its earnings days
    strike_step: np.ndarray  # (5,) the listed strike grid's spacing
    news: tuple[Headline, ...]

    def index(self, symbol: str) -> int:
        return SYMBOLS.index(symbol)

    def next_earnings(self, i: int, day: int) -> int | None:
        return next((d for d in self.earnings[i] if d > day), None)


def _nice_step(price: float) -> float:
    """A strike spacing of about 1% of the price, rounded to 1, 2.5 or 5 times a power of ten."""
    raw = 0.01 * price
    base = 10.0 ** math.floor(math.log10(raw))
    return float(min((m * base for m in (1.0, 2.5, 5.0, 10.0)), key=lambda s: abs(s - raw)))


def _draws(rng: np.random.Generator, days: int) -> dict[str, np.ndarray]:
    """Every random number of `days` days, one row per day, so rows can be replaced without touching others."""
    n = len(SYMBOLS)
    return {
        "regime": rng.random(days),
        "index": rng.standard_normal(days),
        "vol": rng.standard_normal(days),
        "stock": rng.standard_normal((days, n)),
        "jump": rng.standard_normal((days, n)),
        "news": rng.random((days, n)),
        "source": rng.random((days, n)),
        "kind": rng.random((days, n)),
        "side": rng.random((days, n)),
        "length": rng.integers(3, 8, (days, n)),
        "trend": rng.random(days),
    }


def _simulate(seed: int, draws: dict[str, np.ndarray]) -> Market:
    setup = np.random.default_rng([seed % 2**64, 1])  # per-history constants: never perturbed
    n = len(SYMBOLS)
    beta = np.concatenate([[1.0], setup.uniform(0.6, 1.5, n - 1)])
    idio = np.concatenate([[0.0], setup.uniform(0.15, 0.35, n - 1)])
    jump_sd = np.concatenate([[0.0], setup.uniform(0.03, 0.09, n - 1)])
    start = np.concatenate([[setup.uniform(300, 500)], setup.uniform(30, 300, n - 1)])
    earnings = ((),) + tuple(tuple(range(int(setup.integers(5, EARNINGS_EVERY)), DAYS, EARNINGS_EVERY)) for _ in range(n - 1))
    close, vol = np.empty((DAYS, n)), np.empty((DAYS, n))
    regime = np.zeros(DAYS, dtype=np.int64)
    drift = np.zeros((DAYS + 8, n))  # news drift per day, written ahead by each headline
    news: list[Headline] = []
    log_vol, sources = math.log(0.13), list(SOURCES)
    close[0], state, trend = start, 0, 1.0
    for d in range(DAYS):
        if d > 0:
            previous = state
            state = int(np.searchsorted(np.cumsum(_TRANSITION[state]), draws["regime"][d]))
            state = min(state, len(REGIMES) - 1)
            if state == 1 and previous != 1:  # a new trend: up seven times in ten
                trend = 1.0 if draws["trend"][d] < 0.7 else -1.0
            log_vol += 0.12 * (math.log(_TARGET_VOL[state]) - log_vol) + 0.07 * draws["vol"][d]
        regime[d] = state
        index_vol = math.exp(log_vol)
        vol[d] = np.sqrt((beta * index_vol) ** 2 + (idio * math.sqrt(index_vol / 0.15)) ** 2)
        if d > 0:
            market_move = _DRIFT[state] * (trend if state == 1 else 1.0) + index_vol / math.sqrt(252) * draws["index"][d]
            own = idio * math.sqrt(index_vol / 0.15) / math.sqrt(252) * draws["stock"][d]
            jumps = np.array([jump_sd[i] * draws["jump"][d, i] if d in earnings[i] else 0.0 for i in range(n)])
            close[d] = close[d - 1] * np.exp(beta * market_move + own + jumps + drift[d])
        for i in range(1, n):  # today's headlines: published at the close, they move prices from tomorrow
            if draws["news"][d, i] >= NEWS_RATE:
                continue
            source = sources[min(int(draws["source"][d, i] * len(sources)), len(sources) - 1)]
            p_info, p_noise, _ = SOURCES[source]
            u = draws["kind"][d, i]
            kind = "informative" if u < p_info else "noise" if u < p_info + p_noise else "misleading"
            said = 1 if draws["side"][d, i] < 0.5 else -1
            effect = {"informative": said, "noise": 0, "misleading": -said}[kind]
            drift[d + 1 : d + 1 + int(draws["length"][d, i]), i] += effect * NEWS_DRIFT
            template = (_UP if said > 0 else _DOWN)[int(draws["side"][d, i] * 1000) % 3]
            news.append(Headline(d, SYMBOLS[i], source, template.format(s=SYMBOLS[i]), kind))
    steps = np.array([_nice_step(float(p)) for p in start])
    for array in (close, vol, regime, steps):
        array.setflags(write=False)
    long_run = np.sqrt(beta**2 * 0.16**2 + idio**2) * 1.05
    skew = np.where(np.arange(n) == 0, 0.28, 0.12)
    return Market(seed, close, vol, regime, long_run, skew, jump_sd, earnings, steps, tuple(news))


@functools.lru_cache(maxsize=64)
def market_for(seed: int, *, future_seed: int | None = None, after: int | None = None) -> Market:
    """The history of `seed`. With `future_seed` and `after`, every draw of the days after `after` is replaced
    by one from `future_seed` (the no-look-ahead test's perturbed future); days up to `after` are unchanged."""
    draws = _draws(np.random.default_rng([seed % 2**64, 0]), DAYS)
    if future_seed is not None:
        assert after is not None and 0 <= after < DAYS - 1, f"after={after}: give the last unchanged day"
        other = _draws(np.random.default_rng([future_seed % 2**64, 7]), DAYS)
        for key, rows in draws.items():
            rows[after + 1 :] = other[key][after + 1 :]
    return _simulate(seed, draws)
