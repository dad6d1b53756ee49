"""In Debian's chromium: an expert finds a task among every playable one by typing, under one heading per
environment and split (issue 44: "the task list is 134 ungrouped items"), and starts a session on it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_an_expert_types_to_find_a_task_and_plays_it(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "erin")
    page.goto(f"{console.url}/play/")
    picker = page.locator("#play-task")
    groups = picker.locator("optgroup").evaluate_all("groups => groups.map(g => g.label)")
    assert "storebench · test" in groups and all(re.fullmatch(r"[a-z0-9_-]+ · (train|dev|test)", label) for label in groups)
    every = picker.locator("option").count()
    assert every > 20

    page.locator("#task-search").press_sequentially("cash crunch")  # typed as a person types, a key at a time
    visible = picker.locator("option").evaluate_all("options => options.filter(o => !o.hidden).map(o => o.value)")
    assert visible and all("cash-crunch" in value for value in visible) and "storebench/cash-crunch" in visible
    assert page.locator("#task-search-count").inner_text() == f"{len(visible)} of {every} tasks"
    assert picker.input_value() in visible  # the chosen task follows the filter
    shown_groups = picker.locator("optgroup").evaluate_all("groups => groups.filter(g => !g.hidden).map(g => g.label)")
    assert all(label.startswith("storebench") for label in shown_groups)
    shoot(page, "task-picker")

    picker.select_option("storebench/cash-crunch")
    page.locator("#task-search").fill("")
    page.locator("#task-search").dispatch_event("input")  # cleared: every task is back
    assert picker.locator("option").evaluate_all("options => options.filter(o => !o.hidden).length") == every
    assert picker.input_value() == "storebench/cash-crunch"
    page.click("form.inline-form button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    assert "cash-crunch" in page.locator("h1").first.inner_text()
