"""The play page in Debian's chromium at 1280x800: an expert opens StoreBench panels by click and by keyboard
shortcut, each opening charged one operation, toggles a panel's raw JSON, submits a tool form, and nothing
overflows horizontally. Screenshots go to test-output/play-*.png."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.browser.conftest import ROOT
from tests.browser.test_csp import WATCH_VIOLATIONS, _counts

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1280, 800
OUT = ROOT / "test-output"


def _ops_left(page: Any) -> int:
    return int(page.locator("#ops-left").inner_text().split(" of ")[0])


def _shoot(page: Any, name: str, *, full: bool = False) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    # caret="initial": hiding the caret leaves style="" on inputs, which htmx's next swap copies (a CSP report).
    page.screenshot(path=str(OUT / f"play-{name}.png"), full_page=full, caret="initial")


def _no_horizontal_overflow(page: Any) -> None:
    assert page.evaluate("document.scrollingElement.scrollWidth") <= WIDTH


def _step_shown(page: Any, panel: int, step: int) -> None:
    page.wait_for_selector(f"#panel-{panel} .panel-head small:has-text('step {step}')")


def test_an_expert_plays_from_the_keyboard_at_1280_by_800(console: Any, browser: Any) -> None:
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.set_default_timeout(15_000)
    page.add_init_script(WATCH_VIOLATIONS)  # the page's script and its swaps run under the console's CSP
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if _counts(message) else None)
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", "erin")
    page.fill("input[name=password]", "erin-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    page.goto(f"{console.url}/play/")
    page.select_option("select[name=task]", "storebench/cash-crunch")
    page.fill("input[name=seed]", "0")
    page.click("form.inline-form button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    assert _ops_left(page) == 40 and "Not opened yet" in page.locator("#panel-1").inner_text()
    assert "cash" not in page.locator("#status-bar").inner_text().lower()  # the free line: day, clock, budget
    _no_horizontal_overflow(page)
    _shoot(page, "start")

    page.click("#panel-1 .panel-open button")  # Inventory, by click
    _step_shown(page, 1, 1)
    assert _ops_left(page) == 39 and page.locator("#panel-1 table.panel-table tbody tr").count() > 10

    page.keyboard.press("o")  # Open orders, by shortcut
    _step_shown(page, 2, 2)
    assert _ops_left(page) == 38

    page.keyboard.press("e")  # the end_window form opens with its button focused; Enter submits it
    assert page.locator("#tool-end_window").get_attribute("open") is not None
    page.keyboard.press("Enter")
    page.wait_for_selector("#last-result >> text=Step 3: end_window")
    assert page.locator("#day").inner_text() == "Day 1 of 35"
    for key, panel, step in (("o", 2, 4), ("i", 1, 5), ("c", 0, 6), ("t", 3, 7), ("s", 5, 8), ("p", 4, 9)):
        before = _ops_left(page)
        page.keyboard.press(key)
        _step_shown(page, panel, step)
        assert _ops_left(page) == before - 1, f"opening panel {panel} with {key!r} costs one operation"
    paid = json.loads(page.locator("#panel-2 details.raw pre").text_content() or "{}")  # the result the panel paid for
    assert 0 < page.locator("#panel-2 tbody tr").count() == len(paid["orders"])  # day 1's open orders, oldest first
    assert page.locator("#panel-0 circle.dot").count() == 2  # cash on day 1 and day 0's sales row
    assert page.locator("#panel-3 tbody tr").count() >= 1
    _no_horizontal_overflow(page)
    assert page.locator("details.tool-form[open]").count() == 0  # a panel's call opens no tool form
    page.evaluate("window.scrollTo(0, 0)")
    _shoot(page, "panels")

    raw = page.locator("#panel-1 details.raw")
    assert not raw.locator("pre").is_visible()
    raw.locator("summary").click()
    assert raw.locator("pre").is_visible() and "days_of_cover" in raw.locator("pre").inner_text()
    raw.locator("summary").click()

    page.keyboard.press("?")
    assert page.locator("#shortcut-help").get_attribute("open") is not None
    assert "the fulfil_orders form" in page.locator("#shortcut-help").inner_text()
    _shoot(page, "shortcuts")
    page.keyboard.press("Escape")
    assert page.locator("#shortcut-help").get_attribute("open") is None

    page.keyboard.press("f")  # the fulfil form opens with its first field focused; typing there opens no panel
    page.keyboard.press("Tab")
    page.keyboard.type("12")  # max_orders; "1" and "2" would be keys outside a field
    assert page.locator("#tool-fulfil_orders [name=max_orders]").input_value() == "12"
    assert page.locator("#panel-2 .panel-head small").inner_text().endswith("step 4")
    page.locator("#tool-fulfil_orders button[type=submit]").click()
    page.wait_for_selector("#last-result >> text=Step 10: fulfil_orders")
    assert "shipped" in page.locator("#last-result").inner_text()
    _no_horizontal_overflow(page)

    page.mouse.wheel(0, 2500)  # the status bar stays in view
    page.wait_for_timeout(200)
    box = page.locator("#status-bar").bounding_box()
    assert box is not None and 0 <= box["y"] <= 2
    _shoot(page, "scrolled")

    for step in range(11, 16):  # five days on, stock runs low: the inventory marks the SKUs at risk
        page.keyboard.press("e")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#last-result >> text=Step {step}: end_window")
        box = page.locator("#last-result").bounding_box()  # the form sits low in the list; its result is drawn above
        assert box is not None and 0 <= box["y"] < HEIGHT, "the call's result is brought into view"
    page.keyboard.press("i")
    _step_shown(page, 1, 16)
    assert page.locator("#panel-1 tbody tr.warn, #panel-1 tbody tr.risk").count() >= 1
    first = page.locator("#panel-1 tbody tr").first
    assert first.get_attribute("class") in ("risk", "warn")  # the lowest cover comes first
    page.locator("#panel-1").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -70)")
    _no_horizontal_overflow(page)
    _shoot(page, "risk")
    assert page.evaluate("window.__violations") == [] and errors == []
    _shoot(page, "full", full=True)
