"""The credit graph in Debian's chromium: a researcher opens the seeded smart-triage episode from the episode list
and sees its steps on more than one credit level with edges between them, then clicks the dot of a top-level step
and lands on that step. Screenshot: credit-graph.png."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_researcher_sees_credit_on_several_levels_and_follows_the_top_step(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/episodes/")
    page.click("table.episodes tbody a")
    page.wait_for_selector("#credit-graph svg")
    graph = page.locator("#credit-graph")
    assert graph.is_visible()
    levels = graph.locator(".credit-node").evaluate_all("nodes => [...new Set(nodes.map(n => n.dataset.level))]")
    assert len(levels) >= 2, levels  # not flat
    heights = graph.locator(".credit-node").evaluate_all("nodes => [...new Set(nodes.map(n => Math.round(n.getBoundingClientRect().top)))]")
    assert len(heights) >= 2  # the person sees the levels at different heights
    assert graph.locator(".credit-edge").count() > 0 and "8× and more" in graph.inner_text()
    shoot(page, "credit-graph")
    highest = graph.locator(f".credit-node.lvl-{max(int(level) for level in levels)}")
    tops = set(highest.evaluate_all("nodes => nodes.map(n => n.dataset.index)"))
    highest.first.click(force=True)  # top-level dots of neighbouring steps overlap: the mouse takes the one on top
    page.wait_for_url(re.compile(r"\?at=\d+#step-\d+$"))
    index = page.url.rsplit("#step-", 1)[1]
    assert index in tops and page.locator(f"#step-{index}").is_visible()
