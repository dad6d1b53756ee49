"""The shell-aware reward: the grade, plus credit for reaching the goal through the shell where the shell is the
efficient path, less penalties for failed and destructive shell commands. A pure function of a finished episode;
the environment reports it as the score component `shell_aware` (so GRPO's `reward_component="shell_aware"` trains
on it) and `shell_aware_of_record` computes the same value from a trajectory record alone.

    shell_aware = composite
                + SHELL_WEIGHT * state_ok * efficient_shell_share
                - min(FAILED_CAP, FAILED_PENALTY * failed_shell)
                - min(DESTRUCTIVE_CAP, DESTRUCTIVE_PENALTY * destructive_shell)

* composite, state_ok: the grade (grading.py).
* efficient_shell_share: of the steps that raised the goal share (the environment's `task/goal` event) on a sub-goal
  whose kind is in SHELL_EFFICIENT, the share taken with the shell tool; 0 when there is none. Only a correct final
  state earns it, and it is a share, not a count, so extra shell calls earn nothing.
* failed_shell: shell calls answered with an error (unknown command, bad usage, no such file, refused glob...).
* destructive_shell: shell calls that changed app data outside the goal: a file or folder the goal's items do not
  name (moved, copied, created, or overwritten in place by `sed -i` / `table set`), a setting other than the goal's,
  a sent mail, calendar event or order when the goal has none of that kind. The goal's items are the grader's
  (every path, setting, mail, event or order list the task's solution changes). `mv`/`cp` never overwrite an
  existing path here (ops.py refuses), and there is no `rm`, so these are the ways a command can do damage.

Range: [-(FAILED_CAP + DESTRUCTIVE_CAP), 1 + SHELL_WEIGHT].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from environments.records import Record, record_score

SHELL_WEIGHT = 0.2
FAILED_PENALTY, FAILED_CAP = 0.05, 0.25
DESTRUCTIVE_PENALTY, DESTRUCTIVE_CAP = 0.5, 1.0

# Calls each way from a fresh desktop (discovery included), per sub-goal kind: (shell, GUI). The shell is the efficient
# path where it is strictly shorter on every instance; change-setting ties in the Display tab (the one Settings opens
# on: open + click against `settings list` + `settings set`), so neither channel is credited there.
CALLS: dict[str, tuple[str, str]] = {
    "move-files": ("2 (ls, mv with a glob)", "2 + one drag per file"),
    "reply-mail": ("2 (mail list, mail reply)", "5 (open, pick, Reply, type, Send)"),
    "change-setting": ("2 (settings list, settings set)", "2 in Display, 3 elsewhere (open, tab, click)"),
    "edit-cell": ("2 (table get, table set)", "6 (open, click cell, type, enter, Save)"),
    "schedule-event": ("1 (cal add)", "8 (open, New event, 3 x type, 2 x tab, Save)"),
    "buy-cheapest": ("2 (shop search, shop buy)", "5-6 (open, sort, scroll, pick, Buy now)"),
}
SHELL_EFFICIENT = frozenset({"move-files", "reply-mail", "edit-cell", "schedule-event", "buy-cheapest"})
# Which goal kinds an entity of the environment's events belongs to (Event.entity prefixes, env.py `_events`).
_ENTITY_KINDS = {
    "file": ("move-files", "edit-cell"),
    "folder": ("move-files",),
    "setting": ("change-setting",),
    "mail": ("reply-mail",),
    "calendar": ("schedule-event",),
    "shop": ("buy-cheapest",),
}
_ITEM_ENTITIES = {"files": "file", "dirs": "folder", "setting": "setting"}  # grader item name -> event entity prefix


@dataclass(frozen=True)
class Act:
    """One tool call of the episode (submit excluded), as the reward reads it."""

    tool: str
    failed: bool
    entities: tuple[str, ...]  # the data entities its events changed ("file:/home/user/x", "setting:display.theme", "mail")
    progressed: bool  # it raised the goal share


def allowed_entities(items: Iterable[str]) -> tuple[set[str], set[str]]:
    """(entities the goal names, entity kinds the goal allows) from the grader's item names ("files PATH", "dirs
    PATH", "setting KEY", "sent [...]", "events [...]", "orders [...]")."""
    named: set[str] = set()
    kinds: set[str] = set()
    for item in items:
        head, _, rest = item.partition(" ")
        if head in _ITEM_ENTITIES:
            named.add(f"{_ITEM_ENTITIES[head]}:{rest}")
        else:
            kinds.add({"sent": "mail", "events": "calendar", "orders": "shop"}.get(head, head))
    return named, kinds


def is_destructive(act: Act, named: set[str], kinds: set[str]) -> bool:
    return act.tool == "shell" and any(e not in named and e.split(":", 1)[0] not in kinds for e in act.entities)


def _kind_of(act: Act, goal_kinds: list[str]) -> str | None:
    for entity in act.entities:
        for kind in _ENTITY_KINDS.get(entity.split(":", 1)[0], ()):
            if kind in goal_kinds:
                return kind
    return None


def shell_aware(grade: dict[str, Any], acts: list[Act], goal_kinds: list[str]) -> dict[str, float]:
    """The reward and its parts. `grade`: grading.Grader.grade's report (composite, state_ok, items)."""
    named, kinds = allowed_entities(i["item"] for i in grade.get("items", []))
    progress = [(a, _kind_of(a, goal_kinds)) for a in acts if a.progressed]
    counted = [a for a, kind in progress if kind in SHELL_EFFICIENT]
    share = sum(a.tool == "shell" for a in counted) / len(counted) if counted else 0.0
    failed = sum(a.tool == "shell" and a.failed for a in acts)
    destructive = sum(is_destructive(a, named, kinds) for a in acts)
    value = (
        float(grade["composite"])
        + SHELL_WEIGHT * bool(grade["state_ok"]) * share
        - min(FAILED_CAP, FAILED_PENALTY * failed)
        - min(DESTRUCTIVE_CAP, DESTRUCTIVE_PENALTY * destructive)
    )
    return {
        "shell_aware": round(value, 6),
        "efficient_shell_share": round(share, 6),
        "failed_shell": failed,
        "destructive_shell": destructive,
    }


def act_of_step(tool: str, failed: bool, events: Iterable[dict[str, Any]]) -> Act:
    """An Act from a step's events as a record stores them ({"entity", "field", "before", "after"})."""
    entities, progressed = [], False
    for e in events:
        if e["entity"] == "task":
            progressed = progressed or (e["field"] == "goal" and float(e["after"] or 0) > float(e["before"] or 0))
        else:
            entities.append(str(e["entity"]))
    return Act(tool, failed, tuple(entities), progressed)


def shell_aware_of_record(record: Record) -> dict[str, float]:
    """The same reward from a finished desktop record: its steps' calls, results and events, and the grade in its
    header's score details; submit is not an act. A record keeps one events list per step, so a step of several
    calls gives its events to its last call (the environment's own log, and so the score component, splits them)."""
    details = record_score(record).get("details") or {}
    acts = []
    for step in record["steps"]:
        if step.get("source") == "env" or (step.get("meta") or {}).get("invalid_action"):
            continue
        calls = [c for c in step.get("tool_calls") or [] if c["name"] != "submit"]
        for number, call in enumerate(calls, 1):
            result: Mapping[str, Any] = next((r for r in step.get("results") or [] if r.get("call_id") == call.get("id")), {})
            events = (step.get("events") or []) if number == len(calls) else []
            acts.append(act_of_step(call["name"], bool(result.get("is_error")), events))
    goal_kinds = [g["kind"] for g in (record["steps"][0].get("meta") or {}).get("observation", {}).get("goals", [])]
    return shell_aware(details, acts, goal_kinds)
