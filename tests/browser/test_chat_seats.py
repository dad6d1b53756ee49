"""Humans on both sides of a conversational environment, in Debian's chromium: the toy refund desk
(tests/lab/play/chatdesk.py, a `user` role slot) served by a console that registers it at start.

- a person plays the user against the project's scripted agent (`clerk`) on the chat page, with the goal card;
- an expert plays the agent and the environment's rule-based user answers each message in the same submit.
Screenshots: test-output/chat-*.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT, ConsoleServer, seeded_console
from tests.browser.test_csp import WATCH_VIOLATIONS, _counts

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1280, 800
OUT = ROOT / "test-output"


@pytest.fixture(scope="module")
def desk(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[ConsoleServer]:
    server = seeded_console(tmp_path_factory.mktemp("chatdesk"), seeded_state, preload=("tests.lab.play.chatdesk",))
    server.start()
    server.api("POST", "/api/v1/agents/?project=acme", {"name": "clerk", "kind": "scripted", "model": "clerk"})
    yield server
    server.stop()


def _login(browser: Any, server: ConsoleServer, errors: list[str]) -> Any:
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.set_default_timeout(15_000)
    page.add_init_script(WATCH_VIOLATIONS)
    page.on("console", lambda message: errors.append(message.text) if _counts(message) else None)
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", "erin")
    page.fill("input[name=password]", "erin-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")
    return page


def start_play(page: Any, server: ConsoleServer, task: str, seed: int) -> None:
    """Start a play session of `task` at `seed` from the play page's first form, as a person does; on its page after."""
    page.goto(f"{server.url}/play/")
    page.select_option("form.inline-form >> nth=0 >> select[name=task]", task)
    page.fill("form.inline-form >> nth=0 >> input[name=seed]", str(seed))
    page.click("form.inline-form >> nth=0 >> button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))


def _shoot(page: Any, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / f"chat-{name}.png"), full_page=True, caret="initial")


def _bubbles(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#conversation ol.panel-chat li").all_inner_texts()]


def test_a_person_plays_the_user_against_a_scripted_agent(desk: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, desk, errors)
    page.goto(f"{desk.url}/play/")
    form = page.locator("#play-user form")
    form.locator("select[name=task]").select_option("chatdesk/refund")
    form.locator("select[name=agent]").select_option("clerk")
    form.locator("input[name=seed]").fill("0")
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    assert "You bought a kettle (order O-101) and want a refund." in page.locator("#goal-card").inner_text()
    assert _bubbles(page) == ["agent\nHello! How can I help you today?"]
    assert page.locator("#tool-refund").count() == 0  # the user never sees the agent's tools
    _shoot(page, "user-start")

    page.fill("#reply-message", "Hi, I'd like a refund please.")
    page.click("#reply-form button[type=submit]")
    page.wait_for_selector("#conversation li:has-text('What is your order number?')")
    assert _bubbles(page)[-2:] == ["user\nHi, I'd like a refund please.", "agent\nSure. What is your order number?"]
    _shoot(page, "user-middle")

    page.fill("#reply-message", "It's O-101")
    page.keyboard.press("Tab")
    page.click("#reply-form button[type=submit]")
    page.wait_for_selector("#chat-ended")
    assert "ended (agent_stop)" in page.locator("#chat-ended").inner_text()
    assert _bubbles(page)[-1] == "agent\nYour order O-101 is refunded."
    assert page.evaluate("document.scrollingElement.scrollWidth") <= WIDTH
    _shoot(page, "user-end")
    page.click("#chat-ended a")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert "It's O-101" in page.content()  # the person's turn is in the episode, as the user's
    assert errors == []


def test_an_expert_plays_the_agent_and_the_rule_user_answers(desk: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, desk, errors)
    start_play(page, desk, "chatdesk/refund", 1)
    assert page.locator("#conversation").is_visible() and "No messages." in page.locator("#conversation").inner_text()

    page.fill("#say-message", "Hello! What is your order number?")
    page.click("#say-form button[type=submit]")
    page.wait_for_selector("#conversation li.role-user:has-text('It is O-202.')")
    assert _bubbles(page) == ["agent\nHello! What is your order number?", "user\nIt is O-202."]
    _shoot(page, "agent-middle")

    page.fill("#say-message", "Thanks, I am refunding order O-202 now: it is refunded.")
    page.click("#say-form button[type=submit]")
    page.wait_for_selector("#conversation li.role-user:has-text('Thank you, bye.')")
    page.locator("#tool-refund summary").click()
    page.fill("#tool-refund input[name=order_id]", "O-202")
    _shoot(page, "agent-refund")
    page.click("#tool-refund button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert "1.00" in page.content() or "1.0" in page.content()
    _shoot(page, "agent-episode")
    assert errors == []
