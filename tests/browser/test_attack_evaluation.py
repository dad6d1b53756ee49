"""In Debian's chromium: a researcher launches an attack evaluation from the console's form and reads the four
figures on its page when it ends (screenshot under test-output/screenshots/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_researcher_launches_an_attack_evaluation_and_reads_the_four_figures(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/evaluations/")
    page.locator("#evaluation-form summary").click()
    form = page.locator("#evaluation-form form")
    form.locator("[name=agent]").fill("hardened")
    form.locator("[name=task_set]").fill("storebench/launch-week")
    form.locator("[name=seeds]").fill("104")
    form.locator("[name=attack]").select_option("authority")
    form.locator("[name=guidance]").check()
    shoot(page, "attack-evaluation-form")
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/evaluations/*/")
    page.locator("#attack-metrics").wait_for(timeout=120_000)  # the status section polls until the evaluation ends
    text = page.locator("#attack-metrics").inner_text()
    assert "1 benign, 1 attacked episodes" in text and "Attack success rate" in text
    cells = page.locator("#attack-metrics tbody td").all_inner_texts()
    # Hardened resists (0%) and follows both guidance items; its utility under attack is close to, not equal to, the
    # benign one: reading the planted text spends minutes and the world moves with them (engine 2.0.0).
    assert abs(float(cells[0]) - float(cells[1])) < 0.05 and cells[2] == "0%" and cells[3].startswith("100% of 4"), cells
    assert "attack=authority guidance=True" in page.locator("#evaluation-status").inner_text()
    shoot(page, "attack-evaluation-figures")
