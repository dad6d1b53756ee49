"""Scripted desktop users: the anchors every desktop score is read against.

    oracle          runs the task's solution through the shell, then submits (privileged: it reads the solution)
    cli-preferring  reads the public goals, discovers through the shell (ls, mail list, settings list, table get,
                    shop search) and acts there: right, but a command or two longer than the oracle
    gui-only        does everything through the GUI by the control names of version 1 of each app (its stored
                    priors), dismissing promotions it sees; renamed controls (drift) defeat it (anchors_gui.py)
    random-valid    clicks, types, scrolls and opens apps at random among what the screen offers, then submits

Every scripted anchor is a generator fed the results of its earlier calls (`ScriptPolicy`): `act` replays the
trajectory's results into a fresh generator, so a run continues from its record alone.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from abc import abstractmethod
from collections.abc import Generator
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step

Script = Generator[ToolCall, dict[str, Any], None]
_LINE = re.compile(
    r'^\s*\[(?P<id>[^\]]+)\] (?P<role>\w+) (?P<name>"(?:[^"\\]|\\.)*")(?: value=(?P<value>"(?:[^"\\]|\\.)*"))?(?: \{(?P<states>[a-z,]+)\})?$'
)


def parse_screen(text: str) -> list[dict[str, Any]]:
    """The accessibility text back as elements: {"id", "role", "name", "value", "states"} in tree order."""
    out = []
    for line in text.splitlines():
        if m := _LINE.match(line):
            states = set(m["states"].split(",")) if m["states"] else set()
            out.append(
                {"id": m["id"], "role": m["role"], "name": json.loads(m["name"]), "value": json.loads(m["value"] or '""'), "states": states}
            )
    return out


def opening(history: list[Step]) -> dict[str, Any]:
    """The opening observation's data: {"goals", "drift", "screen"}."""
    return dict(((history[0].get("meta") or {}).get("observation") or {}) if history else {})


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


class ScriptPolicy(Policy):
    """A policy whose behaviour is a generator of calls; results of its earlier calls are sent back in order."""

    def __init__(self, env: Env, seed: int) -> None:
        self.seed = seed

    @abstractmethod
    def script(self, start: dict[str, Any]) -> Script:
        """The calls, given the opening observation's data; each yield receives that call's result content."""

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        results = [r.get("content") for s in history[1:] if s.get("source") != "env" for r in (s.get("results") or [])[:1]]
        script = self.script(opening(history))
        try:
            nxt = next(script)
            for content in results:
                nxt = script.send(content if isinstance(content, dict) else {})
        except StopIteration:
            nxt = call("submit")
        return Action(tool_calls=[ToolCall(nxt.name, nxt.arguments, f"c{len(history)}")])


class Oracle(ScriptPolicy):
    name = "oracle"

    def __init__(self, env: Env, seed: int) -> None:
        super().__init__(env, seed)
        self.solution = tuple(getattr(env, "desk_task").solution)  # noqa: B009 - the oracle is privileged by design

    def script(self, start: dict[str, Any]) -> Script:
        for command in self.solution:
            yield call("shell", command=command)
        yield call("submit")


def _rows(content: dict[str, Any]) -> list[list[str]]:
    return [line.split("\t") for line in str(content.get("output", "")).splitlines()]


class CliPreferring(ScriptPolicy):
    name = "cli-preferring"

    def script(self, start: dict[str, Any]) -> Script:
        for goal in start.get("goals", []):
            yield from getattr(self, "_" + goal["kind"].replace("-", "_"))(goal)
        yield call("submit")

    def _move_files(self, goal: dict[str, Any]) -> Script:
        listing = yield call("shell", command=f"ls {shlex.quote(goal['from'])}")
        if any(name.endswith(goal["ext"]) for name in str(listing.get("output", "")).split()):
            yield call("shell", command=f"mv {shlex.quote(goal['from'])}/*{goal['ext']} {shlex.quote(goal['to'])}")

    def _reply_mail(self, goal: dict[str, Any]) -> Script:
        listing = yield call("shell", command="mail list")
        found = next((r[0] for r in _rows(listing) if len(r) == 3 and r[1] == goal["sender"] and r[2] == goal["subject"]), None)
        if found:
            yield call("shell", command=f"mail reply {found} --body {shlex.quote(goal['body'])}")

    def _change_setting(self, goal: dict[str, Any]) -> Script:
        listing = yield call("shell", command="settings list")
        key = next((r[0].split("=")[0] for r in _rows(listing) if len(r) == 3 and r[1] == goal["label"]), None)
        if key:
            yield call("shell", command=f"settings set {key} {goal['value']}")

    def _edit_cell(self, goal: dict[str, Any]) -> Script:
        yield call("shell", command=f"table get {shlex.quote(goal['path'])}")
        yield call("shell", command=f"table set {shlex.quote(goal['path'])} {goal['row']} {goal['column']} {goal['value']}")

    def _schedule_event(self, goal: dict[str, Any]) -> Script:
        yield call("shell", command=f"cal add --title {shlex.quote(goal['title'])} --date {goal['date']} --time {goal['time']}")

    def _buy_cheapest(self, goal: dict[str, Any]) -> Script:
        found = yield call(
            "shell", command=f"shop search --category {goal['category']} --max-price {goal['max_price'] - 0.01} --sort price"
        )
        fits = [r[0] for r in _rows(found) if len(r) == 5 and float(r[4].split()[-1]) >= goal["min_rating"]]
        if fits:
            yield call("shell", command=f"shop buy {fits[0]}")


class RandomValid(ScriptPolicy):
    """Random among what the screen offers; seeded per step, so the same trajectory gives the same next call."""

    name = "random-valid"
    STEPS = 20

    def script(self, start: dict[str, Any]) -> Script:
        rng = random.Random(f"desktop-random-{self.seed}")
        screen = str(start.get("screen", ""))
        for _ in range(self.STEPS):
            ids = [e["id"] for e in parse_screen(screen) if e["role"] in ("button", "listitem", "tab", "checkbox", "cell", "textbox")]
            choice = rng.random()
            if choice < 0.5 and ids:
                nxt = call("click", id=rng.choice(ids))
            elif choice < 0.6:
                nxt = call("type", text=rng.choice(("hello", "2026-12-01", "ok")))
            elif choice < 0.7 and any(e["role"] == "list" for e in parse_screen(screen)):
                nxt = call("scroll", direction=rng.choice(("up", "down")), amount=rng.randint(1, 5))
            elif choice < 0.8:
                nxt = call("key", combo=rng.choice(("enter", "tab", "escape")))
            elif choice < 0.9:
                nxt = call("shell", command=rng.choice(("ls", "mail list", "settings list", "cal list")))
            else:
                nxt = call("open_app", app=rng.choice(("files", "mail", "calendar", "settings", "shop", "table")))
            content = yield nxt
            screen = str(content.get("screen", screen))
        yield call("submit")
