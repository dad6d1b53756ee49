"""The toolgym world: small seeded facts a tiny model can learn to look up and report.

Tasks
    lookup: "What is the color of the <item>?" The agent calls `lookup(item)`, reads the color in the result,
        then calls `answer(color)`. Two turns; the second depends on what the first returned.
    echo: "Say the word <word>." The agent calls `say(word)`. One turn.
    guess: "Guess the secret word." The secret is the same for every seed and never shown: only the reward
        reveals it (a bandit in tool form: what RL can learn and imitation of random play cannot). One turn.

Rewards
    lookup: 0.3 for having looked up the asked item, plus 0.7 for the right answer (composite in [0, 1]).
    echo, guess: 1 for the right word. Rewards arrive at the end, on the step that finishes the episode.

Episode End
    The agent answers (lookup) or speaks (echo); or `max_calls` tool calls pass ("max_steps").
    Invalid calls (unknown tool, bad arguments) are error results and count toward max_calls.

Arguments
    seed: picks the facts (item -> color) and the question; everything else is fixed.

Version History
    1: first version (lookup, echo; guess added without changing them).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any

ITEMS: tuple[str, ...] = ("lamp", "apple", "box", "stone", "river", "cloud", "tiger", "table", "chair", "glass", "shoe", "paper")
COLORS: tuple[str, ...] = ("red", "green", "blue", "yellow", "black", "orange", "purple", "white")
WORDS: tuple[str, ...] = ("apple", "river", "cloud", "tiger", "stone", "paper", "glass", "table")
SECRET = "tiger"  # the guess task's answer, for every seed


@dataclass
class World:
    task: str  # "lookup" | "echo" | "guess"
    target: str  # the asked item (lookup) or word (echo)
    colors: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    looked_up: list[str] = field(default_factory=list)
    answer: str | None = None
    finished: bool = False
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "target": self.target,
            "colors": self.colors,
            "calls": self.calls,
            "looked_up": self.looked_up,
            "answer": self.answer,
            "finished": self.finished,
            "reason": self.reason,
        }

    def state_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:32]


def new_world(task: str, seed: int) -> World:
    rng = random.Random(f"toolgym/{task}/{seed}")  # the env's own stream; never the global random
    if task == "echo":
        return World(task=task, target=rng.choice(WORDS))
    if task == "guess":
        return World(task=task, target=SECRET)
    colors = {item: rng.choice(COLORS) for item in ITEMS}
    return World(task=task, target=rng.choice(ITEMS), colors=colors)


def question(world: World) -> str:
    if world.task == "echo":
        return f"Say the word {world.target}."
    if world.task == "guess":
        return "Guess the secret word: say one word."
    return f"What is the color of the {world.target}? Look it up, then answer."


def composite(world: World) -> float:
    if world.task in ("echo", "guess"):
        return 1.0 if world.answer == world.target else 0.0
    found = 0.3 if world.target in world.looked_up else 0.0
    right = 0.7 if world.answer is not None and world.answer == world.colors[world.target] else 0.0
    return found + right
