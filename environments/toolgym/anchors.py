"""Scripted toolgym policies: the expert (always right) and a random caller (a floor)."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.toolgym.world import COLORS, ITEMS, SECRET

_TARGET = re.compile(r"(?:color of the|Say the word) (\w+)")


def _question(history: list[dict[str, Any]]) -> str:
    return str(next((s.get("message") or "" for s in history if s.get("source") in ("env", "user")), ""))


class ExpertPolicy(Policy):
    """Looks the asked item up, then answers with the color the tool returned (or says the asked or secret word)."""

    name = "toolgym-expert"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        match = _TARGET.search(_question(history))
        target = match.group(1) if match else SECRET  # no word asked: the guess task
        if any(t.name == "say" for t in tools):
            return Action(tool_calls=[ToolCall("say", {"word": target}, "c0")])
        for step in reversed(history):
            for result in step.get("results") or []:
                content = result.get("content")
                content = json.loads(content) if isinstance(content, str) and content.startswith("{") else content
                if isinstance(content, dict) and content.get("item") == target:
                    return Action(tool_calls=[ToolCall("answer", {"color": content["color"]}, f"c{len(history)}")])
        return Action(tool_calls=[ToolCall("lookup", {"item": target}, f"c{len(history)}")])


class RandomPolicy(Policy):
    """Calls a random tool with random (well-formed) arguments; seeded, so it is reproducible."""

    name = "toolgym-random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        tool = self.rng.choice(tools)
        value = self.rng.choice(COLORS if tool.name == "answer" else ITEMS)
        key = next(iter(tool.parameters["properties"]))
        return Action(tool_calls=[ToolCall(tool.name, {key: value}, f"c{len(history)}")])
