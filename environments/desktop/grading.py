"""Grading on the final state, plus a CLI-aware credit for shorter correct paths.

The expected final state is the task's solution run through the shell on a copy of the starting desktop.
What the solution changed is the goal (one item per file path, folder, setting, new event, sent mail, and
the order list); everything else must stay as it was (collateral damage: a deleted file, an extra purchase,
a stray mail). Mail and events are compared by content, never by id.

    goal        = satisfied items / goal items
    state_ok    = goal == 1 and no collateral damage
    efficiency  = min(1, len(solution) / actions)       actions: tool calls other than submit
    composite   = (1 - W) * goal * (1 - COLLATERAL_PENALTY * damaged) + W * efficiency * state_ok

with W = EFFICIENCY_WEIGHT. The solution is the shortest known correct path, usually through the shell, so a
GUI path that reaches the right state scores above 1 - W but below an equally correct shell path: the
component credits shorter correct paths, and only correct ones.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from environments.desktop.shell import run_shell
from environments.desktop.state import AppData, Ui
from environments.desktop.tasks import DesktopTask

EFFICIENCY_WEIGHT = 0.2
COLLATERAL_PENALTY = 0.5


def expected_state(task: DesktopTask, initial: AppData) -> AppData:
    data, ui = copy.deepcopy(initial), Ui()
    for command in task.solution:
        output, failed = run_shell(data, ui, command)
        assert not failed, f"{task.key}: the solution's {command!r} failed: {output}"
    return data


def facets(data: AppData) -> dict[str, Any]:
    """The gradeable state, keyed per item; counters for what has no stable key (sent mail, events, orders)."""
    sent = Counter((m.to, m.subject, m.body.strip(), m.in_reply_to) for m in data.mails if m.folder == "sent")
    events = Counter((e.title, e.date, e.time) for e in data.events)
    return {
        "files": dict(data.files),
        "dirs": set(data.dirs),
        "settings": dict(data.settings),
        "sent": sent,
        "events": events,
        "orders": tuple(data.orders),
    }


class Grader:
    """Grades final states of one episode: the start and the expected end are computed once, at reset."""

    def __init__(self, task: DesktopTask, initial: AppData) -> None:
        self.task = task
        self.start, self.want = facets(initial), facets(expected_state(task, initial))

    def grade(self, final: AppData, actions: int) -> dict[str, Any]:
        start, want, got = self.start, self.want, facets(final)
        items: list[tuple[str, bool]] = []
        damage: list[str] = []
        for kind in ("files", "dirs"):
            for path in sorted(set(start[kind]) | set(want[kind]) | set(got[kind])):
                ok = _lookup(want[kind], path) == _lookup(got[kind], path)
                if _lookup(start[kind], path) != _lookup(want[kind], path):
                    items.append((f"{kind} {path}", ok))
                elif not ok:
                    damage.append(f"{kind} {path} changed")
        for key, value in want["settings"].items():
            if start["settings"][key] != value:
                items.append((f"setting {key}", got["settings"][key] == value))
            elif got["settings"][key] != value:
                damage.append(f"setting {key} changed")
        for name in ("sent", "events"):
            wanted = want[name] - start[name]
            items += [(f"{name} {list(entry)}", got[name][entry] >= count) for entry, count in wanted.items()]
            damage += [f"extra {name} {list(entry)}" for entry in got[name] - want[name]]
        if want["orders"] != start["orders"]:
            items.append((f"orders {list(want['orders'])}", got["orders"] == want["orders"]))
        elif got["orders"] != want["orders"]:
            damage.append(f"orders {list(got['orders'])}")
        return _summary(self.task, items, damage, actions)


def _lookup(collection: Any, key: str) -> Any:
    """A file's text, or whether a folder exists (None when absent either way)."""
    return collection.get(key) if isinstance(collection, dict) else (key in collection or None)


def _summary(task: DesktopTask, items: list[tuple[str, bool]], damage: list[str], actions: int) -> dict[str, Any]:
    goal = sum(ok for _, ok in items) / len(items) if items else 0.0
    state_ok = goal == 1.0 and not damage
    efficiency = min(1.0, len(task.solution) / actions) if actions else 0.0
    composite = (1 - EFFICIENCY_WEIGHT) * goal * (1 - COLLATERAL_PENALTY * bool(damage)) + EFFICIENCY_WEIGHT * efficiency * state_ok
    return {
        "composite": round(composite, 6),
        "goal": goal,
        "state_ok": state_ok,
        "efficiency": round(efficiency, 6),
        "actions": actions,
        "shortest": len(task.solution),
        "items": [{"item": name, "ok": ok} for name, ok in items],
        "damage": damage[:20],
    }
