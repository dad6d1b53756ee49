"""A clumsy toolgym agent for loop tests (and, through tests/browser/preload.py, the browser test's server).

It answers a guessed colour at once on odd seeds: a failure whose correction (asking the owner first) the expert's
rule diagnosis finds and replay verifies, since once it holds a tool result it plays like the expert. On even
seeds it plays like the expert from the start and passes.
"""

from __future__ import annotations

from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.policies import register_policy
from environments.toolgym.anchors import ExpertPolicy, _results
from environments.toolgym.world import COLORS


class ClumsyPolicy(Policy):
    name = "clumsy"
    kind = "scripted"

    def __init__(self, seed: int) -> None:
        self.guess = seed % 2 == 1

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        if self.guess and not _results(history):
            return Action(tool_calls=[ToolCall("answer", {"color": COLORS[-1]}, f"c{len(history)}")])
        return ExpertPolicy().act(history, tools)


def _clumsy(env: Env, seed: int) -> Policy:
    return ClumsyPolicy(seed)


def register() -> None:
    register_policy("toolgym", "clumsy", _clumsy)
