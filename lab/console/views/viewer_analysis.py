"""What the episode viewer shows from lab.diagnoses.analysis: step importance (graph credit) and the pivotal step.

Credit is computed by the same service as the API's `credit` action and cached per finished episode (its steps
never change after that); a running episode shows none. The pivotal step is computed on request by the service
of the API's `pivotal` action: inline for episodes up to PIVOTAL_INLINE_STEPS steps (a binary search of anchor
continuations: 1.0 s for a 30-step and 1.3 s for a 221-step StoreBench episode on this 2-core machine; credit
takes 10 ms at 221 steps), else as a pivotal-only diagnosis job whose page the browser goes to.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from environments.policies import policy_names
from lab.console.views.common import console_view, role_of, visible_projects
from lab.diagnoses.analysis import episode_label_pivotal, episode_step_credit
from lab.diagnoses.jobs import diagnosis_job_launch
from lab.errors import DomainError, Forbidden
from lab.projects.models import ANNOTATE_ROLES
from lab.trajectories.models import Episode, EpisodeStatus
from lab.trajectories.selectors import episode_get

TOP_STEPS = 5
PIVOTAL_INLINE_STEPS = 400
DEFAULT_ANCHOR = "smart-triage"


def step_credit(episode: Episode) -> dict[int, float]:
    """{step index: credit} of a finished episode (sums to 1 over agent steps); {} while it runs."""
    if episode.status == EpisodeStatus.RUNNING or not episode.step_count:
        return {}
    # The content hash (or creation time) keeps a reused id from ever reading another episode's credit.
    key = f"console:episode-credit:{episode.pk}:{episode.step_count}:{episode.content_hash or episode.created_at.timestamp()}"
    credit = cache.get(key)
    if credit is None:
        credit = {row["index"]: row["credit"] for row in episode_step_credit(episode=episode)["credit"]}
        cache.set(key, credit, timeout=24 * 3600)
    return credit


def steps_annotate(episode: Episode, steps: list[dict[str, Any]], credit: dict[int, float] | None = None) -> list[dict[str, Any]]:
    """Each step dict gains `credit` (share of the episode's credit, or None) and `pivotal` (bool)."""
    credit = step_credit(episode) if credit is None else credit
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
    return {
        "pivotal": episode.meta.get("pivotal") or None, "important_steps": [{"index": i, "credit": c} for i, c in ranked],
        "may_label": role_of(request, episode.project_id) in ANNOTATE_ROLES and episode.passed is False,
        "pivotal_anchors": anchors, "default_anchor": DEFAULT_ANCHOR if DEFAULT_ANCHOR in anchors else (anchors[0] if anchors else ""),
    }  # fmt: skip


@require_POST
@console_view
def episode_pivotal(request: HttpRequest, pk: int) -> HttpResponse:
    """Label the pivotal step (the `anchor` field names the strong continuation); back to the episode at that step."""
    episode = episode_get(projects=visible_projects(request), pk=pk)
    if role_of(request, episode.project_id) not in ANNOTATE_ROLES:
        raise Forbidden("forbidden", "Your role in this project does not allow labelling episodes.")
    anchor = request.POST.get("anchor", "").strip() or DEFAULT_ANCHOR
    if anchor not in policy_names(episode.task.env):
        raise DomainError("unknown_anchor", f"{anchor!r} is not a policy of {episode.task.env}", path="anchor")
    if episode.step_count > PIVOTAL_INLINE_STEPS:
        job = diagnosis_job_launch(
            project=episode.project, episode_ids=[episode.pk], pivotal_anchor=anchor, verify=False, user=request.user
        )
        return redirect("diagnosis-job", pk=job.pk)
    label = episode_label_pivotal(episode=episode, anchor=anchor)
    at = f"?at={label['step']}#step-{label['step']}" if label.get("step") is not None else ""
    return redirect(reverse("episode", args=[episode.pk]) + at)
