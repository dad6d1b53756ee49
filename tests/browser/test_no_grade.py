"""A desktop session a person finishes without calling submit is never graded, and the episode page says so (issue 44):
"No grade: the session ended without submit." where the score was, its composite "no grade" instead of "0.000 ·
failed", and what was measured listed as values, with no pass or fail."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import ConsoleServer
from tests.browser.test_chat_seats import OUT, _login, start_play

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_desktop_session_finished_without_submit_reads_as_no_grade(console: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, console, errors)
    start_play(page, console, "desktop/edit-cell", 2)
    page.keyboard.press("o")  # one look at the screen, then the person stops
    page.wait_for_selector("#last-result h2:has-text('Step 1: observe')")
    page.once("dialog", lambda dialog: dialog.accept())  # "End the session now?"
    page.click("#finish-session")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))

    assert page.locator("#episode-status").inner_text() == "finished (agent_stop)"
    assert page.locator("#score-ungraded").inner_text() == "No grade: the session ended without submit."
    assert page.locator("#episode-composite").inner_text() == "no grade (stored as 0.000)"
    table = page.locator("#score-explanation")
    assert table.locator("caption").inner_text() == "Measured when it ended, not a grade"
    assert table.locator("thead th").all_inner_texts()[:2] == ["Measure", "Value"]
    assert table.locator(".tag.good, .tag.bad").count() == 0  # no pass, no fail
    assert "shell_aware" in table.locator("tbody").inner_text()
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "episode-no-grade.png"), full_page=True)
    assert errors == []
