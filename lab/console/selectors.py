"""Reads behind the console pages that no other app owns: keyset episode pages, leaderboards, comparisons."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Avg, Count, F, FloatField, QuerySet, Value
from django.db.models.functions import Cast, Coalesce
from django.utils.dateparse import parse_datetime

from lab.errors import DomainError
from lab.trajectories.models import Episode, Step

PAGE_SIZE = 50
# sort key -> (column, ascending?)
SORTS: dict[str, tuple[str, bool]] = {
    "-created": ("created_at", False),
    "created": ("created_at", True),
    "-composite": ("composite", False),
    "composite": ("composite", True),
    "-steps": ("step_count", False),
    "steps": ("step_count", True),
}


@dataclass
class EpisodePage:
    rows: list[Episode]
    next_cursor: str | None
    sort: str


def _cursor_value(column: str, raw: str) -> Any:
    if column == "created_at":
        parsed = parse_datetime(raw)
        if parsed is None:
            raise ValueError(raw)
        return parsed
    return float(raw) if column == "composite" else int(raw)


def episode_page(episodes: QuerySet[Episode], *, sort: str = "-created", cursor: str = "", size: int = PAGE_SIZE) -> EpisodePage:
    """One page of `episodes` by keyset: `cursor` is the last row's (sort value, id), so page 2000 costs what
    page 1 costs, unlike OFFSET. Sorting by score lists scored episodes only (NULLs have no place in a keyset)."""
    if sort not in SORTS:
        raise DomainError("invalid_sort", f"sort={sort!r}; use one of {', '.join(SORTS)}")
    column, ascending = SORTS[sort]
    if column == "composite":
        episodes = episodes.filter(composite__isnull=False)
    if cursor:
        value_raw, _, id_raw = cursor.rpartition("~")
        try:
            value, last_id = _cursor_value(column, value_raw), int(id_raw)
        except ValueError:
            raise DomainError("invalid_cursor", f"cursor={cursor!r} is not a page cursor from this list") from None
        op = "gt" if ascending else "lt"
        from django.db.models import Q

        episodes = episodes.filter(Q(**{f"{column}__{op}": value}) | Q(**{column: value, f"id__{op}": last_id}))
    order = [column, "id"] if ascending else [f"-{column}", "-id"]
    rows = list(episodes.order_by(*order)[: size + 1])
    next_cursor = None
    if len(rows) > size:
        rows = rows[:size]
        last = rows[-1]
        value = getattr(last, column)
        next_cursor = f"{value.isoformat() if isinstance(value, datetime) else value}~{last.pk}"
    return EpisodePage(rows=rows, next_cursor=next_cursor, sort=sort)


# --- leaderboard ----------------------------------------------------------------------------------------------


@dataclass
class LeaderRow:
    kind: str  # human | agent | anchor
    name: str
    n: int
    mean: float
    pass_rate: float
    ci: float  # half-width of the 95% confidence interval of the mean
    task: str = ""

    @property
    def low(self) -> float:
        return max(0.0, self.mean - self.ci)

    @property
    def high(self) -> float:
        return min(1.0, self.mean + self.ci)


@dataclass
class Leaderboard:
    overall: list[LeaderRow] = field(default_factory=list)
    by_task: dict[str, list[LeaderRow]] = field(default_factory=dict)


def contender_kind(source: str, agent_kind: str | None) -> str:
    if source == "human" or agent_kind == "human":
        return "human"
    return "anchor" if agent_kind == "scripted" else "agent"


def _ci95(row: dict[str, Any]) -> float:
    """Half-width of the normal-approximation 95% interval of the mean, from E[x] and E[x^2] (SQLite's sample
    standard deviation fails on groups of one). With n < 2 there is no spread to estimate: 0, shown as n=1."""
    n = row["n"]
    if n < 2:
        return 0.0
    variance = max(0.0, (row["mean_sq"] - row["mean"] ** 2) * n / (n - 1))
    return 1.96 * math.sqrt(variance) / math.sqrt(n)


def leaderboard(*, projects: QuerySet, env: str = "", split: str = "", env_version: str = "", task: str = "") -> Leaderboard:
    """Finished, scored episodes grouped by contender (agent config; each human is one), per task and overall.

    Unfinished runs that were scored (agent_stop, bankrupt: composite 0) stay in the means, as the score rules say."""
    episodes = Episode.objects.filter(project__in=projects, status="finished", composite__isnull=False)
    if env:
        episodes = episodes.filter(task__env=env)
    if split:
        episodes = episodes.filter(task__split=split)
    if env_version:
        episodes = episodes.filter(task__env_version=env_version)
    if task:
        episodes = episodes.filter(task__key=task.rpartition("/")[2])
    passed = Coalesce(Cast("passed", FloatField()), Value(0.0))
    stats = dict(n=Count("id"), mean=Avg("composite"), mean_sq=Avg(F("composite") * F("composite")), pass_rate=Avg(passed))
    name = Coalesce(F("agent__name"), Value("(unnamed)"))
    board = Leaderboard()
    grouped = episodes.annotate(contender=name).values("task__env", "task__key", "source", "agent__kind", "contender").annotate(**stats)
    for row in grouped.order_by("task__env", "task__key", "-mean"):
        key = f"{row['task__env']}/{row['task__key']}"
        board.by_task.setdefault(key, []).append(
            LeaderRow(kind=contender_kind(row["source"], row["agent__kind"]), name=row["contender"], n=row["n"], mean=row["mean"],
                      pass_rate=row["pass_rate"], ci=_ci95(row), task=key)
        )  # fmt: skip
    for row in episodes.annotate(contender=name).values("source", "agent__kind", "contender").annotate(**stats).order_by("-mean"):
        board.overall.append(
            LeaderRow(kind=contender_kind(row["source"], row["agent__kind"]), name=row["contender"], n=row["n"], mean=row["mean"],
                      pass_rate=row["pass_rate"], ci=_ci95(row))
        )  # fmt: skip
    for rows in board.by_task.values():
        rows.sort(key=lambda r: -r.mean)
    return board


# --- compare ----------------------------------------------------------------------------------------------------


def _action_key(step: dict[str, Any]) -> Any:
    return [(c.get("name"), c.get("arguments")) for c in step.get("tool_calls") or []], step.get("message")


def steps_window(episode: Episode, start: int, stop: int) -> list[dict[str, Any]]:
    from lab.trajectories.services import episode_steps_as_dicts

    return episode_steps_as_dicts(episode, start=start, stop=stop)


def first_divergence(a: Episode, b: Episode, *, chunk: int = 500) -> int | None:
    """The first step index where the two episodes act differently (or one has ended), read in chunks."""
    start = 0
    longest = max(a.step_count, b.step_count)
    while start < longest:
        left, right = steps_window(a, start, start + chunk), steps_window(b, start, start + chunk)
        for i in range(max(len(left), len(right))):
            if i >= len(left) or i >= len(right) or _action_key(left[i]) != _action_key(right[i]):
                return start + i
        start += chunk
    return None


def score_deltas(a: Episode, b: Episode) -> list[dict[str, Any]]:
    """Per component (composite first): a's value, b's value and b - a."""
    sa, sb = (a.score or {}).get("components") or {}, (b.score or {}).get("components") or {}
    rows = [{"name": "composite", "a": a.composite, "b": b.composite}]
    rows += [{"name": name, "a": sa.get(name), "b": sb.get(name)} for name in sorted(set(sa) | set(sb))]
    for row in rows:
        row["delta"] = row["b"] - row["a"] if row["a"] is not None and row["b"] is not None else None
    return rows


def step_search(episode: Episode, query: str, *, limit: int = 100) -> list[dict[str, Any]]:
    """Steps whose message, reasoning, tool calls or results contain `query` (case-insensitive)."""
    from django.db.models import Q, TextField

    text = query[:200]
    steps = Step.objects.filter(episode=episode).annotate(
        calls_text=Cast("tool_calls", TextField()), results_text=Cast("results", TextField()), message_text=Cast("message", TextField())
    )
    found = steps.filter(
        Q(message_text__icontains=text) | Q(reasoning__icontains=text) | Q(calls_text__icontains=text) | Q(results_text__icontains=text)
    )
    return list(found.order_by("index").values("index", "source", "message_text", "calls_text")[:limit])
