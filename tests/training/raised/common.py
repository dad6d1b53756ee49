"""What the RAISED tests share: the prompt style and a pair whose planted text reaches the anchor."""

from __future__ import annotations

from functools import cache

from environments.attacks import report_of
from training.data import PromptStyle
from training.raised.pairs import Pair, anchor_pair

STYLE = PromptStyle(compact_tools=True)


@cache
def visible_pair() -> Pair:
    """A pair whose planted note reaches the oracle (an account note: it always reads the account)."""
    for seed in range(40):
        pair = anchor_pair("servicedesk/bill-total", seed, style="direct", guidance=True)
        if pair is not None and (report_of(pair.injected["header"]["score"]) or {}).get("slot") == "account_note":
            return pair
    raise AssertionError("no account-note injection among 40 seeds")
