"""Compare two episodes of a task side by side: aligned by step, first divergence marked, score deltas, and each
side's team (its header's "team") and per-role accounting (its header's "roles"); and every episode of a task and
seed turn by turn, beside the human's (compare_turns)."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any

from django.http import HttpRequest, HttpResponse

from lab.console.lanes import lane_order
from lab.console.selectors import first_divergence, score_deltas, steps_window
from lab.console.turns import MAX_COLUMNS, SCAN_STEPS, turn_table
from lab.console.turns import ROWS as ROWS_TURNS
from lab.edge import int_param
from lab.errors import DomainError
from lab.pages import console_view, page, visible_projects
from lab.trajectories.models import Episode
from lab.trajectories.selectors import env_versions_differ, episode_get
from lab.trajectories.shared import episode_header

ROWS = 100


@console_view
def compare(request: HttpRequest) -> HttpResponse:
    projects = visible_projects(request)
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    if not a_id or not b_id:
        raise DomainError(
            "missing_parameter", "Name two episodes: /compare/?a=<id>&b=<id> (the viewer links to episodes of the same task and seed)."
        )
    a, b = episode_get(projects=projects, pk=a_id), episode_get(projects=projects, pk=b_id)
    divergence = first_divergence(a, b)
    default_start = max(0, (divergence or 0) - 5)
    start = max(0, int_param(request.GET.get("start", default_start), name="start"))
    left, right = steps_window(a, start, start + ROWS), steps_window(b, start, start + ROWS)
    rows = [
        {
            "index": start + i,
            "a": sa,
            "b": sb,
            "diverged": divergence is not None and start + i >= divergence,
            "first": start + i == divergence,
        }
        for i, (sa, sb) in enumerate(zip_longest(left, right))
    ]
    longest = max(a.step_count, b.step_count)
    context = {
        "a": a,
        "b": b,
        "rows": rows,
        "divergence": divergence,
        "deltas": score_deltas(a, b),
        "same_task": (a.task.env, a.task.key) == (b.task.env, b.task.key),
        "same_seed": a.seed == b.seed,
        "same_version": not env_versions_differ(a.task.env_version, b.task.env_version),
        "start": start,
        "next_start": start + ROWS if start + ROWS < longest else None,
        "prev_start": max(0, start - ROWS) if start else None,
        **team_context(a, b),
    }
    return page(request, "console/compare.html", context, fragment="console/_compare_rows.html")


def team_context(a: Episode, b: Episode) -> dict[str, Any]:
    """Both sides' teams and a per-role table over the roles either side has (a role one side lacks shows as —)."""
    ha, hb = episode_header(a), episode_header(b)
    roles_a, roles_b = ha.get("roles") or {}, hb.get("roles") or {}
    names = lane_order(set(roles_a) | set(roles_b))
    rows = [{"role": r, "a": roles_a.get(r), "b": roles_b.get(r)} for r in names]
    return {"team_a": ha.get("team") or {}, "team_b": hb.get("team") or {}, "role_rows": rows}


@console_view
def compare_turns(request: HttpRequest, pk: int) -> HttpResponse:
    """The episode's task and seed, turn by turn: the human (or the episode) beside every agent and anchor that played
    it, each column's first divergence from the reference marked (lab.console.turns)."""
    episode = episode_get(projects=visible_projects(request), pk=pk)
    start = max(0, int_param(request.GET.get("start", 0), name="start"))
    table = turn_table(episode=episode, start=start)
    context = {
        "episode": episode,
        "table": table,
        "rows": ROWS_TURNS,
        "next_start": start + ROWS_TURNS if start + ROWS_TURNS < table.turn_count else None,
        "prev_start": max(0, start - ROWS_TURNS) if start else None,
        "max_columns": MAX_COLUMNS,
        "scan_steps": SCAN_STEPS,
    }
    return page(request, "console/compare_turns.html", context, fragment="console/_turn_rows.html")
