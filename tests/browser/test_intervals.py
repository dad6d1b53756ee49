"""In Debian's chromium: a researcher evaluates an anchor on two seeds and reads its figures, on the evaluation's page
and on the leaderboard. At n = 2 a Student-t interval is ± 12.7 standard errors (smart-triage's composites .767 and
.705 on cash-crunch gave [0.34, 1.13]): every interval shown stays inside [0, 1] (the mean's clipped, the pass
rate's Wilson) and says its n."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SCORE_INTERVAL = re.compile(r"\[(\d\.\d{3}), (\d\.\d{3})\] n=(\d+)$")
RATE_INTERVAL = re.compile(r"\[(\d+)%, (\d+)%\] n=(\d+)$")


def _inside(pattern: re.Pattern[str], text: str, n: int, *, scale: float = 1.0) -> tuple[float, float]:
    found = pattern.search(text.strip())
    assert found and int(found[3]) == n, f"no interval with n={n} in {text!r}"
    low, high = float(found[1]) / scale, float(found[2]) / scale
    assert 0.0 <= low <= high <= 1.0, text
    return low, high


def test_a_researcher_reads_bounded_intervals_with_their_n(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/evaluations/")
    page.locator("#evaluation-form summary").click()
    form = page.locator("#evaluation-form form")
    form.locator("[name=agent]").fill("smart-triage")
    form.locator("[name=task_set]").fill("storebench/cash-crunch")
    form.locator("[name=seeds]").fill("0,1")
    form.locator("button[type=submit]").click()
    page.wait_for_url("**/evaluations/*/")
    page.locator("table.aggregate").wait_for(timeout=120_000)  # the status section polls until the evaluation ends

    head = page.locator("table.aggregate thead").inner_text()
    assert "t, within [0, 1]" in head and "95% Wilson" in head
    cells = page.locator("table.aggregate tbody tr").first.locator("td").all_inner_texts()
    assert cells[0] == "2" and cells[1] == "0.736"
    assert _inside(SCORE_INTERVAL, cells[2], 2) == (pytest.approx(0.342, abs=2e-3), 1.0)  # clipped at the top
    assert cells[3].startswith("100% ") and _inside(RATE_INTERVAL, cells[3], 2, scale=100) == (0.34, 1.0)  # Wilson for 2 of 2
    task_cells = page.locator("table.per-task tbody tr").first.locator("td").all_inner_texts()
    _inside(SCORE_INTERVAL, task_cells[3], 2)
    _inside(RATE_INTERVAL, task_cells[4], 2, scale=100)
    shoot(page, "evaluation-intervals")

    page.goto(f"{console.url}/leaderboard/")
    for row in page.locator("section.leaderboard tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        n = int(cells[4])
        if n == 1:
            assert cells[6] == "n=1"  # one episode: no interval, and it says so
            continue
        _inside(SCORE_INTERVAL, cells[6], n)
        _inside(RATE_INTERVAL, cells[7], n, scale=100)
