"""The learned-selector anchor: a scikit-learn logistic regression from snapshot features to a strategy.

    model = selector()               # trained once per process on TRAIN_SEEDS' train periods (about a second)
    LearnedSelector(env, seed)       # the anchor: DeskPolicy with the model's choice

Training data: every LABEL_EVERY days of the train period of each training seed, the features of that day's
market_snapshot (the same view the tool returns) and, as the label, which of no trade and the MENU strategies
on the index made the most over the next HOLD days (anchors.hindsight_pnl). The seeds are disjoint from the
evaluation seeds (EVAL_SEEDS_FROM and up), so the anchor is scored on markets it never saw.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from environments.optionsdesk.anchors import BUDGET, EXPIRY, MENU, DeskPolicy, hindsight_pnl, index_row
from environments.optionsdesk.market import market_for
from environments.optionsdesk.resolver import Request
from environments.optionsdesk.tools import snapshot_view
from environments.optionsdesk.world import PERIODS

TRAIN_SEEDS: tuple[int, ...] = tuple(range(5))
EVAL_SEEDS_FROM = 1000  # evaluation seeds start here: calibration and experiments never train below it
LABEL_EVERY = 5
CHOICES: tuple[str, ...] = ("none", *MENU)


def features(snapshot: dict[str, Any]) -> list[float]:
    """Index realized and implied vol, their gap, 5- and 20-day returns, and the stocks' mean 20-day return."""
    row = index_row(snapshot)
    stocks = [r["ret_20d"] for r in snapshot.get("underlyings", []) if r.get("symbol") != "IDX"]
    realized, implied = float(row.get("realized_vol_20d", 0.0)), float(row.get("implied_vol_1m", 0.0))
    return [
        realized,
        implied,
        implied - realized,
        float(row.get("ret_5d", 0.0)),
        float(row.get("ret_20d", 0.0)),
        float(np.mean(stocks or [0.0])),
    ]


def training_set(seeds: tuple[int, ...] = TRAIN_SEEDS) -> tuple[np.ndarray, np.ndarray]:
    start, end = PERIODS["train"]
    assert all(s < EVAL_SEEDS_FROM for s in seeds), f"training seeds {seeds} overlap the evaluation seeds"
    rows, labels = [], []
    for seed in seeds:
        market = market_for(seed)
        for day in range(start, end - 1, LABEL_EVERY):
            outcomes = [
                hindsight_pnl(market, day, None if c == "none" else Request("IDX", c, EXPIRY, "mid", BUDGET), end=end) for c in CHOICES
            ]
            rows.append(features(snapshot_view(market, day)))
            labels.append(int(np.argmax(outcomes)))
    return np.array(rows), np.array(labels)


@functools.lru_cache(maxsize=1)
def selector() -> Any:
    x, y = training_set()
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=500))
    return model.fit(x, y)


class LearnedSelector(DeskPolicy):
    name = "learned-selector"

    def choose(self, snapshot: dict[str, Any]) -> Request | None:
        if not index_row(snapshot):
            return None
        choice = CHOICES[int(selector().predict(np.array([features(snapshot)]))[0])]
        return None if choice == "none" else Request("IDX", choice, EXPIRY, "mid", BUDGET)
