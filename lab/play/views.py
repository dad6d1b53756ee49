"""The play page: start a session, see the environment's status line and panels, submit one tool call per form
(or open a panel, which is the same submit with the panel's call), finish.

Every submit answers the htmx request with the refreshed play area (panels, the step's result, the forms
carrying the next step index); without JavaScript the same forms post and redirect back to the page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from environments import registry
from environments.records import Step
from lab.edge import form_check
from lab.errors import Conflict, DomainError
from lab.pages import console_view, is_htmx, page, visible_projects, write_projects
from lab.play.chat import chat_session_start
from lab.play.chat_views import chat_offer, chat_page
from lab.play.models import HumanSession
from lab.play.operator import operator_view, panel_data, play_panel
from lab.play.selectors import conversation, human_session_list_for, play_session_visible, playable_tasks, tasks_grouped
from lab.play.services import (
    play_env,
    play_finish,
    play_require_player,
    play_session_start,
    play_sessions_abandon_idle,
    play_submit,
)
from lab.projects.models import ANNOTATE_ROLES
from lab.rollouts.demo import demo_offer
from lab.tool_forms import form_text, tool_arguments_parse, tool_fields, tool_values
from lab.trajectories.selectors import episode_tools, step_list_recent


@console_view
def play_index(request: HttpRequest) -> HttpResponse:
    user_id = request.user.pk
    assert user_id is not None, "console_view lets only logged-in users in"
    projects = visible_projects(request).filter(memberships__user_id=user_id, memberships__role__in=ANNOTATE_ROLES)
    context: dict[str, Any] = {
        "projects": projects,
        "task_groups": tasks_grouped(playable_tasks()),
        "errors": {},
        "form": request.POST,
        **chat_offer(projects),
        **demo_offer(projects=write_projects(request)),
    }
    if request.method == "POST":
        try:
            project = projects.filter(slug=request.POST.get("project", "")).first()
            if project is None:
                raise DomainError("invalid_project", "choose a project where you may play", path="project")
            raw_seed = request.POST.get("seed", "").strip()
            if not raw_seed.lstrip("-").isdigit():
                raise DomainError("invalid_seed", f"seed must be a whole number, got {raw_seed!r}", path="seed")
            task_id, seed = request.POST.get("task", ""), int(raw_seed)
            if request.POST.get("seat") == "user":  # the "Play the user" form: a chat against an agent of the project
                session = chat_session_start(
                    user=request.user, project=project, task_id=task_id, seed=seed, agent=request.POST.get("agent", "")
                )
            else:
                session = play_session_start(user=request.user, project=project, task_id=task_id, seed=seed)
            return redirect("play-session", pk=session.pk)
        except DomainError as exc:
            if exc.status == 403:
                raise
            errors = "chat_errors" if request.POST.get("seat") == "user" else "errors"
            context[errors] = {exc.details.get("path", "form"): exc.message}
            return page(request, "play/index.html", context, status=400)
    play_sessions_abandon_idle()
    context["sessions"] = human_session_list_for(user_id=user_id)[:30]
    return page(request, "play/index.html", context)


def _area_context(
    session: HumanSession,
    *,
    submitted: str = "",
    values: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    result: Step | None = None,
    notice: str = "",
) -> dict[str, Any]:
    env = play_env(session)
    episode = session.episode
    keys = {tool: key for key, tool in registry.env_meta(env.name).shortcuts.items()}
    forms = []
    for spec in env.tools():
        mine = spec.name == submitted
        forms.append(
            {
                "spec": spec,
                "fields": tool_fields(spec, values if mine else None, errors if mine else None),
                "open": mine,
                "error": (errors or {}).get("form", "") if mine else "",
                "key": keys.get(spec.name, ""),
            }
        )
    recent = step_list_recent(episode=episode, count=8)
    slots = registry.env_meta(env.name).roles
    return {
        "session": session,
        "episode": episode,
        "view": operator_view(env, episode),
        "forms": forms,
        "result": result,
        "notice": notice,
        "next_index": episode.step_count,
        "recent": recent,
        "running": episode.status == "running",
        "chat": panel_data("chat", conversation(episode)) if slots else None,
        "slot_names": ", ".join(s.name for s in slots),
    }


@console_view
def play_session_page(request: HttpRequest, pk: int) -> HttpResponse:
    play_sessions_abandon_idle()
    session = play_session_visible(request, pk)
    if session.user_id != request.user.pk:
        return redirect(reverse("episode", args=[session.episode_id]))  # others spectate in the viewer
    if session.role != "actor":
        return chat_page(request, session)
    return page(request, "play/session.html", _area_context(session), fragment="play/_area.html")


@require_POST
@console_view(check_form=False)
def play_submit_view(request: HttpRequest, pk: int) -> HttpResponse:
    # Who is playing comes first: a stranger's submission is refused unread, however malformed it is.
    session = play_session_visible(request, pk)
    play_require_player(session=session, user=request.user)
    form_check(request.POST)
    try:
        expected_index = int(request.POST.get("expected_index", ""))
    except ValueError:
        raise DomainError("invalid_step", "the form lost its step index; reload the page") from None
    message: str | None = None
    values: dict[str, str] = {}
    errors: dict[str, str] = {}
    if "panel" in request.POST:  # opening a panel is its declared call, or the renderer's action on it
        name, arguments = _panel_call(session, request.POST)
    elif "say" in request.POST:  # a message to the environment's user (its role slot answers in the same submit)
        name, arguments, message = None, None, str(request.POST.get("message", ""))
    else:
        name = request.POST.get("tool", "")
        spec = episode_tools(session.episode).get(name)
        if spec is None:
            raise DomainError("unknown_tool", f"{name!r} is not a tool of {session.task}")
        arguments, errors = tool_arguments_parse(spec, request.POST)
        values = tool_values(request.POST, spec)
    if errors:
        context = _area_context(
            session, submitted=name or "", values=values, errors=errors, notice="Nothing was spent: fix the marked fields."
        )
        return page(request, "play/session.html", context, fragment="play/_area.html", status=422)
    try:
        outcome = play_submit(
            session=session, user=request.user, expected_index=expected_index, name=name, arguments=arguments, message=message
        )
    except DomainError as exc:
        if exc.code == "invalid_message":
            context = _area_context(session, notice=exc.message)
            return page(request, "play/session.html", context, fragment="play/_area.html", status=422)
        if exc.status != 409:
            raise
        session.episode.refresh_from_db()
        return page(request, "play/session.html", _area_context(session, notice=exc.message), fragment="play/_area.html", status=409)
    if outcome.finished:
        if is_htmx(request):
            response = HttpResponse(status=204)
            response["HX-Redirect"] = reverse("episode", args=[session.episode_id])
            return response
        return redirect("episode", pk=session.episode_id)
    if not is_htmx(request):
        return redirect("play-session", pk=session.pk)
    # A tool form stays open for the next call of its tool; a panel's call opens no form.
    submitted = "" if "panel" in request.POST else name or ""
    return page(request, "play/_area.html", _area_context(session, submitted=submitted, values=values, result=outcome.step))


def _panel_call(session: HumanSession, data: Any) -> tuple[str, dict[str, Any]]:
    """The call a panel form stands for: the panel's own, or its action tool with what the renderer sent
    (an image click's coordinates, an edited file)."""
    panel = play_panel(session.task.env, data.get("panel"))
    # A screenshot's script sends screen.x / screen.y, already in screen pixels; a plain image click (no script,
    # or the image renderer) sends click.x / click.y in the picture's own pixels.
    prefix = "screen" if data.get("screen.x") else "click"
    if f"{prefix}.x" in data and panel.renderer in ("image", "screenshot") and panel.action_tool:
        try:
            return panel.action_tool, {"x": int(data[f"{prefix}.x"]), "y": int(data[f"{prefix}.y"])}
        except (KeyError, ValueError):
            raise DomainError("invalid_click", "the click lost its coordinates; click the image again", path="panel") from None
    if "path" in data and panel.renderer == "files" and panel.action_tool:
        return panel.action_tool, {"path": str(data["path"]), "content": form_text(data.get("content", ""))}
    return panel.tool, dict(panel.arguments)


@require_POST
@console_view
def play_finish_view(request: HttpRequest, pk: int) -> HttpResponse:
    session = play_session_visible(request, pk)
    try:
        play_finish(session=session, user=request.user, abandon=request.POST.get("abandon") == "1")
    except Conflict as exc:
        if exc.code != "session_finished":
            raise
        # Already over (the last step ended it, another tab finished it, it was abandoned while idle): the person
        # wanted to reach the end, and the episode's page is where it is.
    return redirect("episode", pk=session.episode_id)
