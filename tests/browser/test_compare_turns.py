"""The human beside every agent of a seed, turn by turn, in Debian's chromium: an expert plays cash-crunch seed 0
(the seeded smart-triage anchor played it too), the first turn as smart-triage did and then another, opens the
turn-by-turn page from the episode viewer with the mouse, sees both columns with their scores and the anchor's
column marked where it first acts otherwise, and follows that mark with the keyboard. Screenshot: compare-turns.png."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login, run_tool

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_an_expert_sees_herself_beside_the_anchor_turn_by_turn_with_the_divergence_marked(console: Any, browser: Any, shoot: Any) -> None:
    expert = login(browser, console, "erin")
    expert.goto(f"{console.url}/play/")
    expert.select_option("select[name=task]", "storebench/cash-crunch")
    expert.fill("input[name=seed]", "0")
    expert.click("form.inline-form button[type=submit]")
    expert.wait_for_url(re.compile(r"/play/\d+/$"))
    episode_href = expert.locator("h1 a").get_attribute("href")
    run_tool(expert, "read_news", since_day="0")  # smart-triage's first turn, the same arguments
    expert.wait_for_selector("#last-result >> text=Step 1: read_news")
    run_tool(expert, "get_finance")  # smart-triage lists the products here
    expert.wait_for_selector("#last-result >> text=Step 2: get_finance")
    expert.once("dialog", lambda dialog: dialog.accept())
    expert.click("#finish-session")
    expert.wait_for_url(f"{console.url}{episode_href}")

    expert.click("#turns-link")
    expert.wait_for_selector("#turns-table")
    headers = expert.locator("#turns-table th.turn-col")
    assert headers.count() == 2
    human, anchor = headers.nth(0).inner_text(), headers.nth(1).inner_text()
    assert "human:erin" in human and "reference" in human and "score" in human
    assert "smart-triage" in anchor and "diverges at turn 1" in anchor and re.search(r"score \d\.\d{3}", anchor)
    row0 = expert.locator("#turn-0 td.turn-cell")
    assert "read_news" in row0.nth(0).inner_text() and "read_news" in row0.nth(1).inner_text()  # the same first turn
    assert expert.locator("#turn-0 td.first-divergence").count() == 0
    marked = expert.locator("#turn-1 td.first-divergence")
    assert marked.count() == 1 and "diverges" in marked.inner_text() and "list_products" in marked.inner_text()
    assert "get_finance" in expert.locator("#turn-1 td.turn-cell").nth(0).inner_text()
    assert "(no turn)" in expert.locator("#turn-2 td.turn-cell").nth(0).inner_text()  # the human stopped; the anchor went on
    assert "turns" in expert.locator("#turns-window").inner_text()

    link = expert.get_by_role("link", name="turn 1")
    link.focus()
    expert.keyboard.press("Enter")
    expert.wait_for_url(re.compile(r"#turn-1$"))
    shoot(expert, "compare-turns")
