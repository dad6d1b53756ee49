"""Scripted workers: the anchors every workdesk grade is read against.

    oracle          reads the task's sources, writes the deliverable from the evidence graph, submits (privileged)
    shallow-reader  searches each asked label's subject (its first word), reads the first file that matches,
                    copies the first number of the first matching line, cites what it read: it never aggregates, so
                    totals, rates and deduplicated sums come out wrong, and stale files or other units catch it
    do-nothing      submits at once (no deliverable): must fail every task

Each takes its next call from the trajectory so far, so a run replays from its actions alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.workdesk.rubric import numbers_in
from environments.workdesk.tasks import oracle_text

_ASKED = re.compile(r"^- (.+?): \.\.\.", re.MULTILINE)


def _brief(history: list[Step]) -> str:
    return str(next((s.get("message") or "" for s in history if s.get("source") == "env"), ""))


def _results(history: list[Step]) -> list[dict[str, Any]]:
    found = []
    for step in history:
        for result in step.get("results") or []:
            content = result.get("content")
            content = json.loads(content) if isinstance(content, str) and content.startswith("{") else content
            found.append(content if isinstance(content, dict) else {})
    return found


def _call(history: list[Step], name: str, **arguments: Any) -> Action:
    return Action(tool_calls=[ToolCall(name, arguments, f"c{len(history)}")])


class Oracle(Policy):
    name = "oracle"

    def __init__(self, env: Env, seed: int) -> None:
        desk = getattr(env, "desk")  # noqa: B009 - the oracle is privileged by design: it reads the task and graph
        plan = [ToolCall("read_file", {"path": p}) for p in desk.task.sources]
        plan.append(ToolCall("write_file", {"path": desk.task.deliverable, "content": oracle_text(desk.task, getattr(env, "graph"))}))  # noqa: B009
        self.plan = [*plan, ToolCall("submit", {})]

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        done = sum(1 for s in history if s.get("source") != "env" and s.get("results"))
        call = self.plan[min(done, len(self.plan) - 1)]
        return _call(history, call.name, **call.arguments)


class ShallowReader(Policy):
    name = "shallow-reader"

    def __init__(self, env: Env, seed: int) -> None:
        self.deliverable = str(getattr(env, "desk").task.deliverable)  # noqa: B009 - the brief names it too

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        labels = _ASKED.findall(_brief(history))
        results = _results(history)
        searches = [r for r in results if "hits" in r]
        if len(searches) < len(labels):
            return _call(history, "search", text=labels[len(searches)].split()[0])
        firsts = [self._first_hit(label, s["hits"]) for label, s in zip(labels, searches, strict=True)]
        paths = list(dict.fromkeys(hit.split(":", 1)[0] for hit in firsts if hit))
        reads = [r for r in results if "total_lines" in r]
        if len(reads) < len(paths):
            return _call(history, "read_file", path=paths[len(reads)])
        if not any("chars" in r for r in results):
            lines = []
            for label, hit in zip(labels, firsts, strict=True):
                values = numbers_in(hit.split(": ", 1)[-1]) if hit else []
                lines.append(f"- {label}: {values[0] if values else 'n/a'}")
            text = "# Deliverable\n\n## Summary\nFrom the shared drive.\n\n## Figures\n" + "\n".join(lines)
            text += "\n\n## Sources\n" + "".join(f"- {p}\n" for p in paths)
            return _call(history, "write_file", path=self.deliverable, content=text)
        return _call(history, "submit")

    @staticmethod
    def _first_hit(label: str, hits: list[str]) -> str:
        """The first hit naming the label's last word with a number on it, else the first with a number, else ""."""
        numbered = [h for h in hits if numbers_in(h.split(": ", 1)[-1])]
        return next((h for h in numbered if label.split()[-1].lower() in h.lower()), numbered[0] if numbered else "")


class DoNothing(Policy):
    name = "do-nothing"

    def __init__(self, env: Env, seed: int) -> None:
        pass

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return _call(history, "submit")
