"""Compact tool results and task variants for small models (the option `compact`, the short tasks).

A 10-day episode of the desk in full JSON is about 3,000 tokens of a small tokenizer's text before the model says a
word; most of it is keys repeated per row. With `compact: true` the results a trading episode reads every day become
one short line each, same numbers, fixed order, so a model with a 4k context can play a whole short window:

    market_snapshot  "d31 IDX 4012.5 r1 +0.3% r5 -1.2% r20 +2.0% rv 18% iv 21% | ALPH ... e7"   (e7: earnings in 7 days)
    next_day         "d32 equity 1001234 settled 2"              (+ " MARGIN CALL" when the book was liquidated)
    open_strategy    "p1 iron_condor x12 risk/unit 812 cash 1004321"
    close_position   "closed p1 +1234 cash 1003210"

Other tools (chain, portfolio, news, history) keep their JSON: they are optional reads. Errors are never compacted.
The anchors read the snapshot's JSON, so they play a short task with `compact: false` (same trades, same score);
training.experiments.optionsdesk rewrites their records to the compact lines for SFT.

Short tasks (`SHORT_TASKS`): a seed's window of WINDOW_DAYS inside a period, the window picked by the seed
(seed % windows), compact results; the SOTA recipe trains on `optionsdesk/train-short` (news on or off) and is
evaluated on `optionsdesk/oos-short`, with evaluation seeds from EVAL_SEEDS_FROM.
"""

from __future__ import annotations

from typing import Any

WINDOW_DAYS = 10
SHORT_TASKS: dict[str, dict[str, Any]] = {
    "train-short": {"period": "train", "window_days": WINDOW_DAYS, "compact": True},
    "train-short-nonews": {"period": "train", "window_days": WINDOW_DAYS, "compact": True, "news": False},
    "oos-short": {"period": "oos", "window_days": WINDOW_DAYS, "compact": True},
}


def seed_window(seed: int, period_days: int, window_days: int) -> int:
    """The window's first day within the period (an offset): windows tile the period, the seed picks one."""
    windows = max(1, period_days // window_days)
    return (seed % windows) * window_days


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def compact_result(name: str, content: dict[str, Any]) -> str | dict[str, Any]:
    """The one-line form of a trading episode's frequent results (module docstring); other content unchanged."""
    if "error" in content:
        return content
    if name == "market_snapshot":
        rows = []
        for r in content["underlyings"]:
            earnings = "" if r["earnings_in_days"] is None else f" e{r['earnings_in_days']}"
            rows.append(
                f"{r['symbol']} {r['price']:g} r1 {_pct(r['ret_1d'])} r5 {_pct(r['ret_5d'])} r20 {_pct(r['ret_20d'])} "
                f"rv {round(r['realized_vol_20d'] * 100)}% iv {round(r['implied_vol_1m'] * 100)}%{earnings}"
            )
        return f"d{content['day']} " + " | ".join(rows)
    if name == "next_day":
        line = f"d{content['day']} equity {round(content['equity'])} settled {len(content['settled'])}"
        return line + (" MARGIN CALL" if content.get("margin_call") else "")
    if name == "open_strategy" and "position" in content:
        return f"{content['position']} {content['strategy']} x{content['units']} risk/unit {round(content['risk_per_unit'])} cash {round(content['cash'])}"
    if name == "close_position":
        closed = " ".join(f"{g} {v:+.0f}" for g, v in content["closed"].items()) or "nothing"
        return f"closed {closed} cash {round(content['cash'])}"
    return content
