"""Turn by turn: a human beside every agent and anchor that played the same task and seed (issue 44).

    table = turn_table(episode=e, start=0)   # columns (the reference first), rows of turns, each column's divergence

A *turn* is one decision of the acting party: a step whose source is "agent" or "human", of the actor's lane (no
role, or "actor": a critic's or consultant's advice is not a turn), that calls a tool or says something. Turns, not
step indices, are aligned: an environment's or a simulated user's steps sit between decisions in some records and
not in others.

Two turns *act the same* when they call the same tools, in the same order, with equal canonical arguments (see
`canonical_arguments`); a turn that calls no tool acts by its message, compared with surrounding white space
stripped. A column *diverges* from the reference at the first turn where they act differently, or where one of them
has no turn left while the other still acts. Call ids, reasoning, results and timing never count.

Bounded: at most MAX_COLUMNS columns and ROWS turns a page; turns are read from the first SCAN_STEPS steps of each
episode, in one query for all the columns (and one for the episodes), however many columns there are.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, Case, Value, When

from environments.diagnosis.taxonomy import AGENT_SOURCES
from lab.trajectories.models import Episode, Step
from lab.trajectories.selectors import env_versions_differ, episode_list_siblings

MAX_COLUMNS = 8  # the reference and seven others: as many as a 1280-px screen can hold legibly
ROWS = 40  # turns a page
SCAN_STEPS = 2000  # steps read per episode to find turns and divergences (a long StoreBench episode has ~530)
ACTOR_ROLES = ("", "actor")


def canonical_arguments(arguments: Any) -> str:
    """One string per meaning: a JSON-encoded string of an object is the object, keys sorted, 1 and 1.0 equal (true
    and 1 are not), strings without surrounding white space. {"sku": " A1 ", "qty": 2.0} == '{"qty": 2, "sku": "A1"}'."""
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # not JSON: compared as the string it is
            arguments = json.loads(arguments)
    return json.dumps(_canonical(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        number = float(value)
        return int(number) if math.isfinite(number) and number.is_integer() else repr(number)
    if isinstance(value, str):
        return value.strip()
    return str(value)


def turn_action(step: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What a turn did, in comparable form: ((tool name, canonical arguments), ...), or (("message", text),)."""
    calls = [call for call in step.get("tool_calls") or [] if isinstance(call, dict)]
    if calls:
        return tuple((str(call.get("name")), canonical_arguments(call.get("arguments"))) for call in calls)
    message = step.get("message")
    text = message.strip() if isinstance(message, str) else json.dumps(message, sort_keys=True, default=str)
    return (("message", text),)


def is_turn(step: Mapping[str, Any]) -> bool:
    return (
        step.get("source") in AGENT_SOURCES
        and (step.get("role") or "") in ACTOR_ROLES
        and bool(step.get("tool_calls") or step.get("message"))
    )


def first_turn_divergence(reference: list[dict[str, Any]], other: list[dict[str, Any]]) -> int | None:
    """The first turn where `other` acts differently from `reference` (or one has ended and the other acts), or None."""
    for k in range(max(len(reference), len(other))):
        if k >= len(reference) or k >= len(other) or turn_action(reference[k]) != turn_action(other[k]):
            return k
    return None


@dataclass
class Column:
    episode: Episode
    turns: list[dict[str, Any]]
    reference: bool = False
    divergence: int | None = None  # turn index; None: acts as the reference does on every turn read
    cut: bool = False  # its steps go past SCAN_STEPS: turns beyond were not read
    same_version: bool = True  # of the environment version the reference was played under

    @property
    def divergence_page(self) -> int | None:
        """The `start` of the page that shows the divergence."""
        return None if self.divergence is None else self.divergence // ROWS * ROWS


@dataclass
class TurnTable:
    reference: Episode
    columns: list[Column]
    rows: list[dict[str, Any]] = field(default_factory=list)
    start: int = 0
    stop: int = 0  # one past the last turn shown
    turn_count: int = 0  # the longest column's turns read
    others: int = 0  # episodes of the seed beside the reference, shown or not
    hidden: int = 0  # of those, left out past MAX_COLUMNS


def _reference_and_others(episode: Episode) -> tuple[Episode, list[Episode], int]:
    """The reference (the episode if a human played it, else the seed's best human episode, else the episode itself)
    and the others of the seed, humans first, then the same version, then best score: one query, plus a count when
    there are more than fit."""
    human = Case(When(source="human", then=Value(True)), default=Value(False), output_field=BooleanField())
    # same_version is episode_list_siblings' annotation, which the type checker cannot see from here.
    siblings = episode_list_siblings(episode=episode).annotate(human=human)
    siblings = siblings.order_by("-human", "-same_version", "-composite", "pk")  # type: ignore[misc]
    found: list[Episode] = list(siblings[:MAX_COLUMNS])
    total = len(found) if len(found) < MAX_COLUMNS else siblings.count()
    reference = episode
    if episode.source != "human" and found and found[0].source == "human":
        reference = found.pop(0)
        found.insert(0, episode)
    return reference, found[: MAX_COLUMNS - 1], total


def turn_table(*, episode: Episode, start: int = 0) -> TurnTable:
    """The reference beside every other episode of its task and seed (module docstring), turns start..start+ROWS."""
    reference, others, total = _reference_and_others(episode)
    episodes = [reference, *others]
    steps = (
        Step.objects.filter(episode_id__in=[e.pk for e in episodes], source__in=AGENT_SOURCES, role__in=ACTOR_ROLES, index__lt=SCAN_STEPS)
        .order_by("episode_id", "index")
        .values("episode_id", "index", "source", "role", "message", "tool_calls", "results")
    )
    turns: dict[int, list[dict[str, Any]]] = {e.pk: [] for e in episodes}
    for row in steps:
        step: dict[str, Any] = dict(row)
        if is_turn(step):
            turns[step["episode_id"]].append(step)
    version = reference.task.env_version
    columns = [
        Column(
            episode=e,
            turns=turns[e.pk],
            reference=e is reference,
            cut=e.step_count > SCAN_STEPS,
            same_version=not env_versions_differ(e.task.env_version, version),
        )
        for e in episodes
    ]
    for column in columns[1:]:
        column.divergence = first_turn_divergence(columns[0].turns, column.turns)
    table = TurnTable(reference=reference, columns=columns, start=start, others=total, hidden=max(0, total - len(others)))
    table.turn_count = max(len(c.turns) for c in columns)
    table.stop = min(start + ROWS, table.turn_count)
    for k in range(start, table.stop):
        cells = []
        for column in columns:
            turn = column.turns[k] if k < len(column.turns) else None
            diverged = column.divergence is not None and k >= column.divergence
            cells.append({"turn": turn, "first": column.divergence == k, "diverged": diverged, "reference": column.reference})
        table.rows.append({"index": k, "cells": cells, "any_first": any(c["first"] for c in cells)})
    return table
