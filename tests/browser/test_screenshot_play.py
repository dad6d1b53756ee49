"""Playing a screen in Debian's chromium: the toy desktop (tests/lab/play/screendesk.py) shows its screenshot,
shrunk to fit the page; a click on the picture's "plus" button reaches the environment as click(x, y) in
screen pixels (the page's script scales it back), and the new screen replaces the old. Screenshot:
test-output/screens-played.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT, ConsoleServer, seeded_console
from tests.browser.test_chat_seats import _login

pytestmark = [pytest.mark.browser, pytest.mark.slow]
OUT = ROOT / "test-output"


@pytest.fixture(scope="module")
def desk(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[ConsoleServer]:
    server = seeded_console(tmp_path_factory.mktemp("screendesk"), seeded_state, preload=("tests.lab.play.screendesk",))
    server.start()
    yield server
    server.stop()


def test_clicking_the_screenshot_sends_a_click_in_screen_pixels(desk: ConsoleServer, browser: Any) -> None:
    errors: list[str] = []
    page = _login(browser, desk, errors)
    page.goto(f"{desk.url}/play/")
    form = page.locator("form:has(select[name=task])").first
    form.locator("select[name=task]").select_option("screendesk/press")
    form.locator("input[name=seed]").fill("0")
    form.locator("button[type=submit]").click()
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    picture = page.locator("form.panel-screenshot input[type=image]")
    first_src = picture.get_attribute("src")
    assert first_src and first_src.startswith("/api/v1/screenshots/")
    assert page.evaluate("src => fetch(src).then(r => r.headers.get('content-type'))", first_src) == "image/png"
    box = picture.bounding_box()
    assert box is not None and box["width"] < 1280  # shown smaller than the screen: the click must be scaled
    # The "plus" button spans x 100-299, y 100-159 on the 1280 x 800 screen; click its centre on the picture.
    page.mouse.click(box["x"] + 200 * box["width"] / 1280, box["y"] + 130 * box["height"] / 800)
    page.wait_for_selector("#last-result:has-text('Step 1: click')")
    assert "clicked: plus" in page.locator("#last-result pre").inner_text()  # a flat result reads as "key: value" lines
    new_src = page.locator("form.panel-screenshot input[type=image]").get_attribute("src")
    assert new_src != first_src
    episode = desk.api("GET", "/api/v1/episodes/?project=acme&source=human")["results"][0]
    click = desk.api("GET", f"/api/v1/episodes/{episode['id']}/steps/?offset=1&limit=1")["steps"][0]["tool_calls"][0]
    assert click["name"] == "click" and abs(click["arguments"]["x"] - 200) <= 2 and abs(click["arguments"]["y"] - 130) <= 2
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "screens-played.png"), full_page=True)
    assert errors == []
