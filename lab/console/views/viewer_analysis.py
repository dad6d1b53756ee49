"""What the episode viewer shows from lab.diagnoses: step importance (graph credit) and the pivotal step.

Credit is the API's `credit` computation, cached per finished episode (lab.diagnoses.selectors); a running
episode shows none. The pivotal step is found on request by lab.diagnoses.pivotal: inline for episodes up to
PIVOTAL_INLINE_STEPS steps (a binary search of anchor continuations: 1.0 s for a 30-step and 1.3 s for a 221-step
StoreBench episode on this 2-core machine; credit takes 10 ms at 221 steps), else as a pivotal-only diagnosis job
whose page the browser goes to.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from environments.policies import policy_names
from environments.registry import env_meta
from lab.console.credit_graph import episode_credit_graph
from lab.diagnoses.analysis import pivotal_problem
from lab.diagnoses.pivotal import episode_pivotal_find
from lab.diagnoses.selectors import episode_credit_cached
from lab.errors import DomainError, Forbidden
from lab.pages import console_view, role_of, visible_projects
from lab.projects.models import ANNOTATE_ROLES
from lab.trajectories.models import Episode
from lab.trajectories.selectors import episode_get, episode_in_play_by

TOP_STEPS = 5
PIVOTAL_INLINE_STEPS = 400  # how long the page's request may block: about 1.3 s at 221 steps, a job beyond


def steps_annotate(episode: Episode, steps: list[dict[str, Any]], credit: dict[int, float] | None = None) -> list[dict[str, Any]]:
    """Each step dict gains `credit` (share of the episode's credit, or None) and `pivotal` (bool)."""
    credit = episode_credit_cached(episode=episode) if credit is None else credit
    pivotal = (episode.meta.get("pivotal") or {}).get("step")
    top = max(credit.values(), default=0.0)
    for step in steps:
        step["credit"] = credit.get(step["index"])
        step["credit_bar"] = step["credit"] / top if step["credit"] is not None and top > 0 else 0.0
        step["pivotal"] = pivotal is not None and step["index"] == pivotal
    return steps


def analysis_context(request: HttpRequest, episode: Episode, credit: dict[int, float]) -> dict[str, Any]:
    """The viewer's header additions: the pivotal label, the most important steps, the pivotal form's choices."""
    ranked = sorted(credit.items(), key=lambda item: (-item[1], item[0]))[:TOP_STEPS]
    anchors = policy_names(episode.task.env)
    default = env_meta(episode.task.env).default_anchor or (anchors[0] if anchors else "")
    # An annotator sees the form, or the reason the search cannot run on this episode (an upload from another
    # benchmark, a passed episode, one without tool calls...), never a form that can only fail.
    annotator = role_of(request, episode.project_id) in ANNOTATE_ROLES
    problem = pivotal_problem(episode=episode) if annotator else ""
    return {
        "pivotal": episode.meta.get("pivotal") or None,
        "important_steps": [{"index": i, "credit": c} for i, c in ranked],
        "may_label": annotator and not problem,
        "pivotal_problem": problem,
        "pivotal_anchors": anchors,
        "default_anchor": default,
        "credit_graph": episode_credit_graph(episode=episode) if credit else None,
    }


@require_POST
@console_view
def episode_pivotal(request: HttpRequest, pk: int) -> HttpResponse:
    """Label the pivotal step (the `anchor` field names the strong continuation); back to the episode at that step."""
    episode = episode_get(projects=visible_projects(request), pk=pk)
    if episode_in_play_by(episode=episode, user=request.user):  # anchors run from the player's steps: a free read
        raise Forbidden("in_play", "You are playing this episode; find its pivotal step once the session ends.")
    if role_of(request, episode.project_id) not in ANNOTATE_ROLES:
        raise Forbidden("forbidden", "Your role in this project does not allow labelling episodes.")
    anchor = request.POST.get("anchor", "").strip() or env_meta(episode.task.env).default_anchor
    problem = pivotal_problem(episode=episode, anchor=anchor)
    if problem:
        code = "unknown_anchor" if anchor and anchor not in policy_names(episode.task.env) else "pivotal_unavailable"
        raise DomainError(code, f"No pivotal search on episode {episode.pk}: {problem}.", path="anchor")
    outcome = episode_pivotal_find(episode=episode, anchor=anchor, user=request.user, inline_max_steps=PIVOTAL_INLINE_STEPS)
    if outcome.job is not None:
        return redirect("diagnosis-job", pk=outcome.job.pk)
    label = outcome.label or {}
    at = f"?at={label['step']}#step-{label['step']}" if label.get("step") is not None else ""
    return redirect(reverse("episode", args=[episode.pk]) + at)
