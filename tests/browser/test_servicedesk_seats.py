"""The service desk with humans on both sides, in Debian's chromium (the real environment, not a toy):

- an expert serves Kestrel Telecom's rule-based caller: each message gets the caller's answer in the same submit;
- a person plays the caller against the project's scripted oracle agent, with the goal card at hand.
Screenshots: test-output/servicedesk-*.png."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import ConsoleServer
from tests.browser.test_chat_seats import OUT, _bubbles, _login

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH = 1280


def _shoot(page: Any, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / f"servicedesk-{name}.png"), full_page=True, caret="initial")


def test_an_expert_serves_the_rule_based_caller(console: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, console, errors)
    page.goto(f"{console.url}/play/")
    page.select_option("form.inline-form >> nth=0 >> select[name=task]", "servicedesk/roaming-on")
    page.fill("form.inline-form >> nth=0 >> input[name=seed]", "1")
    page.click("form.inline-form >> nth=0 >> button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    page.fill("#say-message", "Hello, this is Kestrel Telecom. Could you tell me your phone number, please?")
    page.click("#say-form button[type=submit]")
    page.wait_for_selector("#conversation li.role-user")
    said = _bubbles(page)
    assert said[0].startswith("agent\nHello, this is Kestrel Telecom") and said[-1].startswith("user\n")
    assert re.search(r"\d{3}", said[-1]), said  # the caller gives the number it was asked for
    assert page.evaluate("document.scrollingElement.scrollWidth") <= WIDTH
    _shoot(page, "expert")
    assert errors == []


def test_a_person_plays_the_caller_against_the_oracle_agent(console: ConsoleServer, browser: Any) -> None:
    console.api("POST", "/api/v1/agents/?project=acme", {"name": "desk-oracle", "kind": "scripted", "model": "oracle"})
    errors: list[str] = []
    page = _login(browser, console, errors)
    page.goto(f"{console.url}/play/")
    form = page.locator("#play-user form")
    form.locator("select[name=task]").select_option("servicedesk/roaming-on")
    form.locator("select[name=agent]").select_option("desk-oracle")
    form.locator("input[name=seed]").fill("1")
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    card = page.locator("#goal-card").inner_text()
    assert "roaming" in card.lower(), card  # the caller's goal, with the facts only the caller knows
    before = len(_bubbles(page))
    assert before >= 1 and _bubbles(page)[-1].startswith("agent\n")  # the agent spoke and waits for the caller
    phone = re.search(r"\+?\d[\d ]{6,}\d", card)
    page.fill("#reply-message", f"Hi, I want roaming switched on. My number is {phone.group(0) if phone else 'unknown'}.")
    page.click("#reply-form button[type=submit]")
    page.wait_for_selector(f"#conversation ol.panel-chat li >> nth={before + 1}")  # the caller's turn and the agent's answer
    assert _bubbles(page)[before].startswith("user\nHi, I want roaming switched on")
    _shoot(page, "caller")
    assert errors == []
