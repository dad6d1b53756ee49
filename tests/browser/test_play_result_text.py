"""The play page's last result reads as text (issue 44's second walk): the desktop's observe result, an object of two
texts, showed as JSON with its screen's line breaks escaped onto one line ("\\n  [desktop.hint] text ..."); now
each key is a line and the accessibility tree keeps its own lines, whether the panel was opened by key or by click."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import ConsoleServer
from tests.browser.test_chat_seats import OUT, _login

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _last_result(page: Any, step: int) -> str:
    page.wait_for_selector(f"#last-result h2:has-text('Step {step}: observe')")
    return page.locator("#last-result pre").inner_text()


def test_the_desktops_screen_reads_as_lines_after_a_key_and_a_click(console: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, console, errors)
    page.goto(f"{console.url}/play/")
    page.select_option("form.inline-form >> nth=0 >> select[name=task]", "desktop/edit-cell")
    page.fill("form.inline-form >> nth=0 >> input[name=seed]", "1")
    page.click("form.inline-form >> nth=0 >> button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    page.keyboard.press("o")  # the Screen panel, by its shortcut
    shown = _last_result(page, 1)
    assert shown.startswith('description: Desktop: no app is open; focus: none.\nscreen: [desktop] desktop "Desktop"\n'), shown
    assert '\n    [launch.files] button "Files"\n' in shown and "\\n" not in shown and "{" not in shown
    page.click("#panel-0 .panel-open button, #panel-0 .panel-head button")  # the Screenshot panel, by the mouse
    shown = _last_result(page, 2)
    assert "\\n" not in shown and '[launch.table] button "Table editor"' in shown.splitlines()[-1]
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "play-desktop-result-text.png"), full_page=True, caret="initial")
    assert errors == []
