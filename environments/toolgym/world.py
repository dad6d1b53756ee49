"""The toolgym world: small seeded facts a tiny model can learn to look up and report.

Tasks
    lookup: "What is the color of the <item>?" The agent calls `lookup(item)`, reads the color in the result,
        then calls `answer(color)`. Two turns; the second depends on what the first returned.
    echo: "Say the word <word>." The agent calls `say(word)`. One turn.
    guess: "Guess the secret word." The secret is the same for every seed and never shown: only the reward
        reveals it (a bandit in tool form: what RL can learn and imitation of random play cannot). One turn.
    chain: "Which color is the thing <person> owns?" The agent calls `owner(person)` for the person's item,
        `lookup(item)` for its color, then `answer(color)`. Three turns, each built on the one before; the
        steps record that dependency as events (below), so a step dependency graph has real edges.

Events (chain)
    owner(person) writes `note:<person>` (the item it revealed); lookup(item) writes `note:<item>` (its color)
    and reads `note:<person>` for each asked person owning that item; answer reads `note:<item>` of the owned
    item when it was looked up, and writes `episode.answer`. The notes are what the tools revealed to the agent.

Rewards
    lookup: 0.3 for having looked up the asked item, plus 0.7 for the right answer (composite in [0, 1]).
    chain: 0.15 for asking the owner of the asked person, 0.15 for looking up that person's item, 0.7 for the
        right answer.
    echo, guess: 1 for the right word. Rewards arrive at the end, on the step that finishes the episode.

Episode End
    The agent answers (lookup) or speaks (echo); or `max_calls` tool calls pass ("max_steps").
    Invalid calls (unknown tool, bad arguments) are error results and count toward max_calls.

Arguments
    seed: picks the facts (item -> color) and the question; everything else is fixed.

Version History
    1: first version (lookup, echo; guess and chain added without changing them).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any

from environments.budgeted import CallLedger
from environments.meta import ScoreComponent

# The credits of composite() (the module docstring's Rewards).
RIGHT_ANSWER, LOOKED_UP = 0.7, 0.3  # lookup: the right color; having looked up the asked item
CHAIN_STEP = 0.15  # chain: asking the person's owner, and looking up their item, each
LOOKUP_MEASURE = (
    f"lookup: {LOOKED_UP:g} for having looked up the asked item + {RIGHT_ANSWER:g} for answering its color; unfinished episodes score 0"
)
# What the viewer says of the score's one component, the composite itself. Every task has its own tools (echo only
# `say`), and a component's tools must be tools of every task, so none is named here.
COMPONENTS = {
    "composite": ScoreComponent(
        f"{LOOKUP_MEASURE}; chain: {CHAIN_STEP:g} for asking the person's owner + {CHAIN_STEP:g} for looking up their "
        f"item + {RIGHT_ANSWER:g} for the right color; echo and guess: 1 for the right word"
    )
}

ITEMS: tuple[str, ...] = ("lamp", "apple", "box", "stone", "river", "cloud", "tiger", "table", "chair", "glass", "shoe", "paper")
COLORS: tuple[str, ...] = ("red", "green", "blue", "yellow", "black", "orange", "purple", "white")
WORDS: tuple[str, ...] = ("apple", "river", "cloud", "tiger", "stone", "paper", "glass", "table")
PEOPLE: tuple[str, ...] = ("ada", "ben", "cora", "dan", "eve", "finn", "gus", "hana")
SECRET = "tiger"  # the guess task's answer, for every seed


@dataclass
class World(CallLedger):
    task: str  # "lookup" | "echo" | "guess" | "chain"
    target: str  # the asked item (lookup, chain: the item the asked person owns) or word (echo)
    colors: dict[str, str] = field(default_factory=dict)
    person: str = ""  # chain: the asked person
    owners: dict[str, str] = field(default_factory=dict)  # chain: person -> the item they own
    asked: list[str] = field(default_factory=list)  # chain: persons whose owner() was called
    looked_up: list[str] = field(default_factory=list)
    answer: str | None = None

    def to_json(self) -> dict[str, Any]:
        state = {
            "task": self.task,
            "target": self.target,
            "colors": self.colors,
            "calls": self.calls,
            "looked_up": self.looked_up,
            "answer": self.answer,
            "finished": self.finished,
            "reason": self.reason,
        }
        if self.task == "chain":  # only here, so the other tasks' state hashes stay what version 1 recorded
            state.update(person=self.person, owners=self.owners, asked=self.asked)
        return state

    def state_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:32]


def new_world(task: str, seed: int) -> World:
    rng = random.Random(f"toolgym/{task}/{seed}")  # the env's own stream; never the global random
    if task == "echo":
        return World(task=task, target=rng.choice(WORDS))
    if task == "guess":
        return World(task=task, target=SECRET)
    colors = {item: rng.choice(COLORS) for item in ITEMS}
    if task == "chain":
        owners = dict(zip(PEOPLE, rng.sample(ITEMS, len(PEOPLE)), strict=True))
        person = rng.choice(PEOPLE)
        return World(task=task, target=owners[person], colors=colors, person=person, owners=owners)
    return World(task=task, target=rng.choice(ITEMS), colors=colors)


def question(world: World) -> str:
    if world.task == "echo":
        return f"Say the word {world.target}."
    if world.task == "guess":
        return "Guess the secret word: say one word."
    if world.task == "chain":
        return f"Which color is the thing {world.person} owns? Ask owner, look the thing up, then answer."
    return f"What is the color of the {world.target}? Look it up, then answer."


def composite(world: World) -> float:
    if world.task in ("echo", "guess"):
        return 1.0 if world.answer == world.target else 0.0
    right = RIGHT_ANSWER if world.answer is not None and world.answer == world.colors[world.target] else 0.0
    if world.task == "chain":
        return (CHAIN_STEP if world.person in world.asked else 0.0) + (CHAIN_STEP if world.target in world.looked_up else 0.0) + right
    found = LOOKED_UP if world.target in world.looked_up else 0.0
    return found + right
