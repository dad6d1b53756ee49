"""Scripted toolgym policies: the expert (always right) and a random caller (a floor)."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.toolgym.world import COLORS, ITEMS, PEOPLE, SECRET

_TARGET = re.compile(r"(?:color of the|Say the word) (\w+)")
_PERSON = re.compile(r"the thing (\w+) owns")


def _question(history: list[Step]) -> str:
    return str(next((s.get("message") or "" for s in history if s.get("source") in ("env", "user")), ""))


def _results(history: list[Step]) -> list[dict[str, Any]]:
    """Every tool result seen so far that is a JSON object, newest first."""
    found = []
    for step in reversed(history):
        for result in step.get("results") or []:
            content = result.get("content")
            content = json.loads(content) if isinstance(content, str) and content.startswith("{") else content
            if isinstance(content, dict):
                found.append(content)
    return found


class ExpertPolicy(Policy):
    """Looks the asked item up (chain: first asks whose it is), then answers with the color the tool returned
    (or says the asked or secret word)."""

    name = "toolgym-expert"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        question, call_id = _question(history), f"c{len(history)}"
        match = _TARGET.search(question)
        target = match.group(1) if match else SECRET  # no word asked: the guess task
        if any(t.name == "say" for t in tools):
            return Action(tool_calls=[ToolCall("say", {"word": target}, "c0")])
        seen = _results(history)
        person = _PERSON.search(question)
        if person:  # chain: the target is whatever owner() says the person owns
            owned = next((r.get("item") for r in seen if r.get("person") == person.group(1)), None)
            if owned is None:
                return Action(tool_calls=[ToolCall("owner", {"person": person.group(1)}, call_id)])
            target = str(owned)
        color = next((r["color"] for r in seen if r.get("item") == target and "color" in r), None)
        if color is not None:
            return Action(tool_calls=[ToolCall("answer", {"color": color}, call_id)])
        return Action(tool_calls=[ToolCall("lookup", {"item": target}, call_id)])


class RandomPolicy(Policy):
    """Calls a random tool with random (well-formed) arguments; seeded, so it is reproducible."""

    name = "toolgym-random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        tool = self.rng.choice(tools)
        value = self.rng.choice(COLORS if tool.name == "answer" else PEOPLE if tool.name == "owner" else ITEMS)
        key = next(iter(tool.parameters["properties"]))
        return Action(tool_calls=[ToolCall(tool.name, {key: value}, f"c{len(history)}")])
