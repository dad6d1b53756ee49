"""The chat page: a person plays the user (an environment's role slot) against an agent of the project.

The page shows the slot's goal card and the conversation (the chat renderer); a reply form carries the step index
it was written for and answers htmx with the refreshed chat (the agent's answer included), without JavaScript
the form posts and redirects back. Closing ends the episode and goes to its viewer, where spectators watch.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from lab.edge import form_check
from lab.errors import Conflict, DomainError
from lab.pages import console_view, is_htmx, page
from lab.play.chat import awaiting_person, chat_advance, chat_close, chat_goal_card, chat_reply
from lab.play.models import HumanSession
from lab.play.operator import panel_data
from lab.play.selectors import conversation, play_session_visible, slot_tasks
from lab.play.services import play_env, play_require_player
from lab.projects.models import Project
from lab.trajectories.models import AgentKind
from lab.trajectories.selectors import agent_list_enabled
from lab.trajectories.services import episode_steps_as_dicts


def chat_offer(projects: QuerySet[Project]) -> dict[str, Any]:
    """What the play index needs for its "Play the user" form: the tasks with a role slot, the agents to talk to."""
    agents = agent_list_enabled(projects=projects, exclude_kinds=(AgentKind.HUMAN,))
    names = sorted({(a.name, a.kind) for a in agents})
    return {"chat_tasks": slot_tasks(), "chat_agents": [{"name": n, "kind": k} for n, k in names], "chat_errors": {}}


def _context(session: HumanSession, *, notice: str = "") -> dict[str, Any]:
    episode = session.episode
    running = episode.status == "running"
    steps = episode_steps_as_dicts(episode)
    env = play_env(session)
    return {
        "session": session,
        "episode": episode,
        "chat": panel_data("chat", conversation(episode)),
        "notice": notice,
        "goal": chat_goal_card(session, env),
        "running": running,
        "awaiting": running and awaiting_person(session, steps),
        "next_index": episode.step_count,
    }


def chat_page(request: HttpRequest, session: HumanSession) -> HttpResponse:
    if session.episode.status == "running":
        chat_advance(session=session)  # an agent turn interrupted by a restart resumes here
        session.episode.refresh_from_db()
    return page(request, "play/chat.html", _context(session), fragment="play/_chat.html")


@require_POST
@console_view(check_form=False)
def chat_reply_view(request: HttpRequest, pk: int) -> HttpResponse:
    session = play_session_visible(request, pk)
    play_require_player(session=session, user=request.user)  # a stranger's post is refused unread
    form_check(request.POST)
    try:
        expected_index = int(request.POST.get("expected_index", ""))
    except ValueError:
        raise DomainError("invalid_step", "the form lost its step index; reload the page") from None
    try:
        chat_reply(session=session, user=request.user, expected_index=expected_index, text=str(request.POST.get("message", "")))
    except DomainError as exc:
        if exc.status not in (400, 409):
            raise
        session.episode.refresh_from_db()
        status = 422 if exc.code == "invalid_message" else exc.status
        return page(request, "play/chat.html", _context(session, notice=exc.message), fragment="play/_chat.html", status=status)
    if not is_htmx(request):
        return redirect("play-session", pk=session.pk)
    session.episode.refresh_from_db()
    return page(request, "play/_chat.html", _context(session))


@require_POST
@console_view
def chat_close_view(request: HttpRequest, pk: int) -> HttpResponse:
    session = play_session_visible(request, pk)
    try:
        chat_close(session=session, user=request.user)
    except Conflict as exc:
        if exc.code != "session_finished":
            raise
        # Already over: the episode's page is where it is, as for the play page's Finish.
    return redirect("episode", pk=session.episode_id)
