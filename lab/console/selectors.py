"""Reads behind the console pages that no other app owns: keyset episode pages, leaderboards, comparisons."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from django.db.models import Case, CharField, Count, F, FloatField, QuerySet, Sum, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Concat
from django.utils.dateparse import parse_datetime

from environments.stats import wilson
from lab.errors import DomainError
from lab.rollouts.aggregate import COMPOSITE, bounded_t_interval
from lab.trajectories.models import SCORED_TIERS, SET_APART, Episode, Step

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
    # Ids first, from a narrow query (no joins for select_related), then the rows: at 100k episodes the
    # ordering pass over the matching rows is what costs, and it is cheaper without the joined columns.
    ids = list(episodes.order_by(*order).values_list("pk", flat=True)[: size + 1])
    by_id = episodes.model.objects.select_related("task", "agent", "project").in_bulk(ids)
    rows = [by_id[pk] for pk in ids]
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
    low: float | None  # the mean's 95% interval (lab.rollouts.aggregate: Student-t clipped to [0, 1]); None at n = 1
    high: float | None
    pass_low: float  # the pass rate's 95% Wilson interval
    pass_high: float
    task: str = ""
    provenance: str = "recorded"
    agent: str = ""  # the agent config's name, for the link to its episodes; "" for a claimed or missing name


@dataclass
class Leaderboard:
    overall: list[LeaderRow] = field(default_factory=list)
    by_task: dict[str, list[LeaderRow]] = field(default_factory=dict)
    set_apart: dict[str, int] = field(default_factory=dict)  # cancelled / abandoned episodes left out, by ending


def contender_kind(source: str, agent_kind: str | None) -> str:
    if source == "human" or agent_kind == "human":
        return "human"
    return "anchor" if agent_kind == "scripted" else "agent"


def _leader_row(kind: str, name: str, sums: dict[str, Any], task: str = "", provenance: str = "recorded", agent: str = "") -> LeaderRow:
    """Mean and pass rate with their 95% intervals from n, Σx, Σx² and passes (sums rather than SQL's stddev:
    SQLite's fails on groups of one, and sums add up across tasks). The same intervals as an evaluation's."""
    n = int(sums["n"])
    mean = sums["total"] / n
    low = high = None  # with n < 2 there is no spread to estimate; the page shows n=1
    if n >= 2:
        variance = max(0.0, (sums["total_sq"] - n * mean * mean) / (n - 1))
        low, high = bounded_t_interval(n, mean, math.sqrt(variance), COMPOSITE)
    pass_low, pass_high = wilson(sums["passes"], n)
    return LeaderRow(
        kind=kind,
        name=name,
        n=n,
        mean=mean,
        pass_rate=sums["passes"] / n,
        low=low,
        high=high,
        pass_low=pass_low,
        pass_high=pass_high,
        task=task,
        provenance=provenance,
        agent=agent,
    )


def leaderboard(
    *, projects: QuerySet, env: str = "", split: str = "", env_version: str = "", task: str = "", tiers: tuple[str, ...] = SCORED_TIERS
) -> Leaderboard:
    """Finished, scored episodes grouped by contender (agent config; each human is one), per task and overall;
    branches (a diagnosis's verification replays) are never a contender's episodes.

    Only `recorded` episodes by default: the server ran them, so their scores are its own. Other `tiers`
    (UNVERIFIED_TIERS: external, upload) give the labelled section of reported scores; a contender's rows
    stay apart per tier, so a reported score never joins a recorded one.
    Unfinished runs that were scored (agent_stop, bankrupt: composite 0) stay in the means, as the score rules say;
    cancelled and abandoned ones (SET_APART: someone stopped them, they say nothing of the contender) are counted
    apart, in `set_apart`."""
    episodes = Episode.objects.filter(project__in=projects, provenance__in=tiers)
    episodes = episodes.exclude(source="branch")  # a diagnosis's what-if replays, never a contender's result
    if env:
        episodes = episodes.filter(task__env=env)
    if split:
        episodes = episodes.filter(task__split=split)
    if env_version:
        episodes = episodes.filter(task__env_version=env_version)
    if task:
        episodes = episodes.filter(task__key=task.rpartition("/")[2])
    apart = episodes.filter(termination_reason__in=SET_APART).values("termination_reason").annotate(n=Count("id"))
    set_apart = {row["termination_reason"]: row["n"] for row in apart.order_by("termination_reason")}
    episodes = episodes.filter(status="finished", composite__isnull=False).exclude(termination_reason__in=SET_APART)
    passed = Case(When(passed=True, then=Value(1.0)), default=Value(0.0), output_field=FloatField())
    stats = dict(n=Count("id"), total=Sum("composite"), total_sq=Sum(F("composite") * F("composite")), passes=Sum(passed))
    # An upload whose agent claim was refused still shows the name it claimed, marked as a claim (never merged with
    # the real agent of that name: the tier keeps its rows apart).
    claimed = Concat(KT("meta__claimed_agent"), Value(" (claimed)"), output_field=CharField())
    unnamed = Case(When(meta__has_key="claimed_agent", then=claimed), default=Value("(unnamed)"), output_field=CharField())
    name = Coalesce(F("agent__name"), unnamed, output_field=CharField())
    grouped = episodes.annotate(contender=name).values(
        "task__env", "task__key", "source", "agent__kind", "agent__name", "contender", "provenance"
    )
    grouped = grouped.annotate(**stats)
    # One grouped query per (task, contender, tier); the overall rows are the exact sums of those groups.
    overall: dict[tuple[str, str, str], dict[str, float]] = {}
    board = Leaderboard(set_apart=set_apart)
    for group in grouped:
        row: dict[str, Any] = dict(group)
        kind, key, tier = contender_kind(row["source"], row["agent__kind"]), f"{row['task__env']}/{row['task__key']}", row["provenance"]
        board.by_task.setdefault(key, []).append(
            _leader_row(kind, row["contender"], row, task=key, provenance=tier, agent=row["agent__name"] or "")
        )
        sums = overall.setdefault((kind, row["contender"], tier), {"n": 0, "total": 0.0, "total_sq": 0.0, "passes": 0.0})
        for field_name in sums:
            sums[field_name] += row[field_name]
    board.overall = sorted(
        (_leader_row(kind, contender, sums, provenance=tier) for (kind, contender, tier), sums in overall.items()), key=lambda r: -r.mean
    )
    board.by_task = {key: sorted(rows, key=lambda r: -r.mean) for key, rows in sorted(board.by_task.items())}
    return board


# --- compare ----------------------------------------------------------------------------------------------------


def _action_key(step: Mapping[str, Any]) -> Any:
    return [(c.get("name"), c.get("arguments")) for c in step.get("tool_calls") or []], step.get("message")


def steps_window(episode: Episode, start: int, stop: int) -> list[dict[str, Any]]:
    from lab.trajectories.services import episode_steps_as_dicts

    # the viewer's rows: steps_annotate and steps_link add their display fields to these dicts in place
    return cast(list[dict[str, Any]], episode_steps_as_dicts(episode, start=start, stop=stop))


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
    rows: list[dict[str, Any]] = [{"name": "composite", "a": a.composite, "b": b.composite}]
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
    return [dict(hit) for hit in found.order_by("index").values("index", "source", "message_text", "calls_text")[:limit]]


def first_steps_mentioning(episode: Episode, texts: list[str], *, limit: int = 20) -> dict[str, int]:
    """{text: index of the first step whose tool calls contain it} for the first `limit` texts that some step's calls
    contain (the viewer's evidence steps, lab/console/score_explanation.py)."""
    from django.db.models import TextField

    steps = Step.objects.filter(episode=episode).annotate(calls_text=Cast("tool_calls", TextField()))
    found: dict[str, int] = {}
    for text in texts[:limit]:
        index = steps.filter(calls_text__contains=text[:200]).order_by("index").values_list("index", flat=True).first()
        if index is not None:
            found[text] = index
    return found
