"""A session's life cycle in Debian's chromium, as an expert meets it:

- Finish in a stale tab (the session was finished in another) lands on the episode, not on a 409;
- a session left idle past PRACTICUM_PLAY_IDLE_MINUTES is abandoned: the play list and the episode say so, and the
  leaderboard counts it apart instead of ranking it;
- a caller's end-of-call mark (servicedesk's ###STOP###) ends the conversation and never shows in a transcript.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login
from tests.browser.test_csp import WATCH_VIOLATIONS, _counts

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _start(page: Any, console: Any, task: str, seed: int) -> str:
    page.goto(f"{console.url}/play/")
    page.select_option("form.inline-form >> nth=0 >> select[name=task]", task)
    page.fill("form.inline-form >> nth=0 >> input[name=seed]", str(seed))
    page.click("form.inline-form >> nth=0 >> button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    return str(page.url)


def test_finish_in_a_stale_tab_and_an_idle_session_end_where_a_person_expects(console: Any, browser: Any) -> None:
    page = login(browser, console, "erin")
    page.on("dialog", lambda dialog: dialog.accept())  # "End the session now?"
    session_url = _start(page, console, "storebench/cash-crunch", 5)
    other = page.context.new_page()
    other.on("dialog", lambda dialog: dialog.accept())
    other.goto(session_url)
    other.click("#finish-session")
    other.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert other.locator("#episode-status").inner_text() == "finished (agent_stop)"

    page.click("#finish-session")  # this tab still shows the running session
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert page.locator("#episode-status").inner_text() == "finished (agent_stop)"
    page.goto(session_url)
    assert page.locator("#finish-session").count() == 0 and "This session is finished" in page.locator("#session-ended").inner_text()

    idle_url = _start(page, console, "storebench/cash-crunch", 6)
    page.keyboard.press("i")  # one step, then the player walks away
    page.wait_for_selector("#panel-1 .panel-head small:has-text('step 1')")
    session = idle_url.rstrip("/").rsplit("/", 1)[1]
    console.manage(
        "manage.py",
        "shell",
        "-c",
        "from datetime import timedelta; from django.utils import timezone; "
        "from lab.play.models import HumanSession; "
        f"HumanSession.objects.filter(pk={session}).update(last_active_at=timezone.now() - timedelta(hours=3))",
    )
    page.goto(f"{console.url}/play/")
    row = page.locator("table tr", has_text=f"#{session}")
    assert "abandoned" in row.locator(".tag").inner_text() and row.locator("text=continue").count() == 0
    page.goto(idle_url)
    assert "This session is abandoned (abandoned)" in page.locator("#session-ended").inner_text()
    page.click("#session-ended a:text-is('See the episode')")
    assert page.locator("#score-ungraded").inner_text() == "No grade: the session was abandoned without reaching the horizon."
    assert page.locator("#episode-composite").inner_text() == "no grade"
    page.goto(f"{console.url}/leaderboard/")
    assert "Not ranked: 1 abandoned episode" in page.locator("#set-apart").inner_text()


def test_a_callers_end_of_call_mark_never_reaches_the_transcript(console: Any, browser: Any) -> None:
    console.api("POST", "/api/v1/agents/?project=acme", {"name": "desk-oracle", "kind": "scripted", "model": "oracle"})
    page = login(browser, console, "erin")
    page.add_init_script(WATCH_VIOLATIONS)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if _counts(message) else None)
    page.goto(f"{console.url}/play/")
    form = page.locator("#play-user form")
    form.locator("select[name=task]").select_option("servicedesk/cancel-line-in-contract")
    form.locator("select[name=agent]").select_option("desk-oracle")
    form.locator("input[name=seed]").fill("0")
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    page.fill("#reply-message", "Never mind, that is all. Goodbye! ###STOP###")
    page.click("#reply-form button[type=submit]")
    page.wait_for_selector("#chat-ended")
    said = page.locator("#conversation li.role-user").last.inner_text()
    assert said.endswith("Never mind, that is all. Goodbye!") and "###" not in page.locator("#conversation").inner_text()
    page.click("#chat-ended a")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert "Goodbye!" in page.locator("#timeline").inner_text() and "###STOP###" not in page.locator("#timeline").inner_text()
    assert page.evaluate("window.__violations") == [] and errors == []


def test_the_api_names_the_life_cycle_the_pages_show(console: Any, browser: Any) -> None:
    page = login(browser, console, "erin")
    page.on("dialog", lambda dialog: dialog.accept())
    _start(page, console, "storebench/cash-crunch", 7)
    page.keyboard.press("i")
    page.wait_for_selector("#panel-1 .panel-head small:has-text('step 1')")
    page.click("#finish-session")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    shown = page.locator("#episode-status").inner_text()
    episode = page.url.rstrip("/").rsplit("/", 1)[1]
    row = console.api("GET", f"/api/v1/episodes/{episode}/")
    assert shown == f"{row['life_cycle']} ({row['termination_reason']})" == "finished (agent_stop)"
    assert row["counted"] is True and row["session"]["player"] == "erin" and row["session"]["life_cycle"] == "finished"

    idle_url = _start(page, console, "storebench/cash-crunch", 8)
    session = idle_url.rstrip("/").rsplit("/", 1)[1]
    console.manage(
        "manage.py",
        "shell",
        "-c",
        "from datetime import timedelta; from django.utils import timezone; "
        "from lab.play.models import HumanSession; "
        f"HumanSession.objects.filter(pk={session}).update(last_active_at=timezone.now() - timedelta(hours=3))",
    )
    page.goto(f"{console.url}/play/")
    row_tag = page.locator("table tr", has_text=f"#{session}").locator(".tag").inner_text()
    page.locator("table tr", has_text=f"#{session}").locator("a").first.click()
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    abandoned = console.api("GET", f"/api/v1/episodes/{page.url.rstrip('/').rsplit('/', 1)[1]}/")
    assert row_tag == abandoned["life_cycle"] == abandoned["session"]["life_cycle"] == "abandoned"
    assert abandoned["counted"] is False and abandoned["composite"] is None
    assert page.locator("#episode-status .tag").inner_text() == "abandoned"
