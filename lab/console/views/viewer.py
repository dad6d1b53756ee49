"""The episode viewer: header, score breakdown, a step timeline loaded page by page, search, diagnoses, live.

A 2,000-step episode renders one page of steps (STEP_PAGE) around `?at=N`; the rest load on demand (htmx,
when the sentinel scrolls into view), so the first screen costs the same at any length. A running episode
opens at its last page and the live script appends steps from the websocket.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from environments import registry
from lab.console.lanes import episode_lanes, steps_link
from lab.console.score_explanation import explain, with_evidence_steps
from lab.console.selectors import first_steps_mentioning, step_search, steps_window
from lab.console.views.viewer_analysis import analysis_context, steps_annotate
from lab.diagnoses.models import CATEGORIES
from lab.diagnoses.selectors import diagnosis_list_for_episode, episode_credit_cached
from lab.diagnoses.services import diagnosis_create
from lab.edge import int_param
from lab.errors import DomainError, Forbidden
from lab.live.services import live_last_seq
from lab.pages import console_view, page, role_of, visible_projects
from lab.projects.models import ANNOTATE_ROLES, WRITE_ROLES
from lab.rollouts.selectors import rollout_job_for_episode
from lab.tool_forms import tool_arguments_parse, tool_fields, tool_values
from lab.trajectories.models import Episode
from lab.trajectories.selectors import episode_get, episode_in_play_by, episode_list_siblings, episode_tools

STEP_PAGE = 50
LIVE_BATCH = 200


def refuse_the_player(request: HttpRequest, episode: Episode) -> None:
    """Forbidden while the requester is playing this episode: the play page is their view of it (see
    episode_in_play_by); after the session ends the viewer is theirs too."""
    if episode_in_play_by(episode=episode, user=request.user):
        raise Forbidden(
            "in_play",
            "You are playing this episode: look at the world through the play page, where each look is a "
            "charged tool call. The viewer opens to you once the session ends.",
        )


def _int(request: HttpRequest, name: str, default: int) -> int:
    raw = request.GET.get(name, "")
    try:
        return max(0, int_param(raw, name=name)) if raw else default
    except DomainError:
        raise DomainError("invalid_parameter", f"{name}={raw[:40]!r} is not a step number") from None


def _steps_context(episode: Episode, start: int, credit: dict[int, float] | None = None) -> dict[str, Any]:
    start = min(start, max(0, episode.step_count - 1)) // STEP_PAGE * STEP_PAGE
    stop = start + STEP_PAGE
    lanes = episode_lanes(episode)
    steps = steps_link(episode, steps_annotate(episode, steps_window(episode, start, stop), credit), lanes)
    return {
        "episode": episode,
        "steps": steps,
        "start": start,
        "lanes": lanes,
        "next_start": stop if stop < episode.step_count else None,
        "prev_start": max(0, start - STEP_PAGE) if start else None,
    }


@console_view
def episode_viewer(request: HttpRequest, pk: int) -> HttpResponse:
    episode = episode_get(projects=visible_projects(request), pk=pk)
    session = getattr(episode, "human_session", None) if episode_in_play_by(episode=episode, user=request.user) else None
    if session is not None:
        return redirect("play-session", pk=session.pk)
    running = episode.status == "running"
    default_at = max(0, episode.step_count - 1) if running else 0
    # Read the stream position before the steps: a step committed in between arrives twice and is dropped by id.
    last_seq = live_last_seq(stream=f"episode:{episode.pk}")
    credit = episode_credit_cached(episode=episode)
    context = _steps_context(episode, _int(request, "at", default_at), credit)
    context.update(analysis_context(request, episode, credit))
    tools = episode_tools(episode)
    siblings = episode_list_siblings(episode=episode)[:12]
    role = role_of(request, episode.project_id)
    meta = registry.env_meta(episode.task.env)
    # A running episode written by a rollout job can be stopped by those who may launch one.
    job = rollout_job_for_episode(episode=episode) if running and role in WRITE_ROLES else None
    context.update(
        running=running,
        rollout_job=job,
        last_seq=last_seq,
        siblings=siblings,
        tools=sorted(tools),
        categories=CATEGORIES,
        diagnoses=diagnosis_list_for_episode(episode=episode)[:50],
        may_annotate=role in ANNOTATE_ROLES,
        role=role,
        explanation=with_evidence_steps(
            explain(
                episode.score,
                set(tools),
                meta.score_components,
                ended=episode.termination_reason,
                graded_by=meta.graded_by,
                session=episode.source == "human",
            ),
            lambda texts: first_steps_mentioning(episode, texts),
        ),
    )
    return page(request, "console/viewer.html", context)


@console_view
def episode_steps(request: HttpRequest, pk: int) -> HttpResponse:
    """A page of steps for the on-demand timeline; with `stop`, exactly steps [start, stop) (at most LIVE_BATCH),
    which the live script asks for when steps arrive."""
    episode = episode_get(projects=visible_projects(request), pk=pk)
    refuse_the_player(request, episode)
    start = _int(request, "start", 0)
    if request.GET.get("stop"):
        stop = min(_int(request, "stop", start + 1), start + LIVE_BATCH)
        lanes = episode_lanes(episode)
        steps = steps_link(episode, steps_window(episode, start, stop), lanes)
        context = {"episode": episode, "steps": steps, "lanes": lanes, "next_start": None, "prev_start": None}
    else:
        context = _steps_context(episode, start)
        context["direction"] = request.GET.get("dir", "")
    return page(request, "console/_steps.html", context)


@console_view
def episode_search(request: HttpRequest, pk: int) -> HttpResponse:
    episode = episode_get(projects=visible_projects(request), pk=pk)
    refuse_the_player(request, episode)
    query = request.GET.get("q", "").strip()
    hits = step_search(episode, query) if query else []
    return page(request, "console/_search_results.html", {"episode": episode, "query": query, "hits": hits})


@console_view
def tool_form(request: HttpRequest, pk: int) -> HttpResponse:
    """The fields of one of the episode's tools, for the diagnosis correction (the same form as play)."""
    episode = episode_get(projects=visible_projects(request), pk=pk)
    spec = episode_tools(episode).get(request.GET.get("correction_tool", ""))
    fields = tool_fields(spec) if spec else []
    return page(request, "play/_tool_fields.html", {"fields": fields, "prefix": "correction-", "spec": spec})


@require_POST
@console_view
def diagnosis_add(request: HttpRequest, pk: int) -> HttpResponse:
    episode = episode_get(projects=visible_projects(request), pk=pk)
    refuse_the_player(request, episode)
    if role_of(request, episode.project_id) not in ANNOTATE_ROLES:
        raise Forbidden("forbidden", "Your role in this project does not allow writing diagnoses.")
    errors: dict[str, str] = {}
    correction = None
    tool_name = request.POST.get("correction_tool", "")
    spec = episode_tools(episode).get(tool_name)
    values: dict[str, str] = {}
    if tool_name:
        if spec is None:
            errors["correction_tool"] = f"{tool_name!r} is not a tool of this episode"
        else:
            arguments, field_errors = tool_arguments_parse(spec, request.POST, prefix="correction-")
            values = tool_values(request.POST, spec, prefix="correction-")
            errors.update({f"correction-{k}": v for k, v in field_errors.items()})
            correction = {"name": tool_name, "arguments": arguments}
    try:
        step_index = int_param(request.POST.get("step_index", ""), name="step_index", low=0)
    except DomainError:
        errors["step_index"] = f"{request.POST.get('step_index', '')[:40]!r} is not a step number"
        step_index = -1
    if not errors:
        try:
            diagnosis_create(
                episode=episode,
                step_index=step_index,
                category=request.POST.get("category", ""),
                explanation=request.POST.get("explanation", ""),
                author=request.user,
                correction=correction,
            )
        except DomainError as exc:
            errors[str(exc.details.get("path", "form"))] = exc.message
    context = {
        "episode": episode,
        "categories": CATEGORIES,
        "tools": sorted(episode_tools(episode)),
        "errors": errors,
        "form": request.POST,
        "correction_fields": tool_fields(spec, values, {k.removeprefix("correction-"): v for k, v in errors.items()}) if spec else [],
        "diagnoses": diagnosis_list_for_episode(episode=episode)[:50],
        "may_annotate": True,
        "role": role_of(request, episode.project_id),
        "saved": not errors,
    }
    return page(request, "console/viewer_diagnoses.html", context, fragment="console/_diagnoses.html", status=400 if errors else 200)
