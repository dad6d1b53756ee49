"""End to end in Debian's chromium: an expert plays StoreBench while a researcher spectates live, through a
server restart; the session is finished, found on the leaderboard, compared with smart-triage; every page
is screenshotted under test-output/screenshots/."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def login(browser: Any, console: Any, username: str) -> Any:
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"{username}-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    return page


def run_tool(page: Any, tool: str, **fields: str) -> None:
    form = page.locator(f"#tool-{tool}")
    if form.get_attribute("open") is None:
        form.locator("summary").click()
    for name, value in fields.items():
        form.locator(f"[name={name}]").fill(value)
    form.locator("button[type=submit]").click()


def test_an_expert_plays_while_a_researcher_spectates_through_a_restart(console: Any, browser: Any, shoot: Any) -> None:
    expert = login(browser, console, "erin")
    shoot(expert, "dashboard")

    expert.goto(f"{console.url}/play/")
    expert.select_option("select[name=task]", "storebench/cash-crunch")
    expert.fill("input[name=seed]", "0")
    expert.click("form.inline-form button[type=submit]")
    expert.wait_for_url(re.compile(r"/play/\d+/$"))
    session_url = expert.url
    episode_href = expert.locator("h1 a").get_attribute("href")
    assert expert.locator("#ops-left").inner_text().startswith("40 of 40")
    shoot(expert, "play-start")

    spectator = login(browser, console, "rita")
    spectator.goto(f"{console.url}{episode_href}")
    spectator.wait_for_selector("#live-indicator[data-state=live]")

    run_tool(expert, "get_finance")
    expert.wait_for_selector("#last-result >> text=Step 1: get_finance")
    assert expert.locator("#ops-left").inner_text().startswith("39 of 40")
    spectator.wait_for_selector("#step-1 >> text=get_finance")

    run_tool(expert, "set_price", sku="P01", price="lots")  # refused by the form, nothing spent
    expert.wait_for_selector(".field-error >> text=expected a number, got 'lots'")
    assert expert.locator("#ops-left").inner_text().startswith("39 of 40")
    shoot(expert, "play-field-error")

    run_tool(expert, "get_product", sku="P99-ZZZ-M")  # valid form, the environment answers with an error
    expert.wait_for_selector("#last-result.is-error >> text=unknown SKU")
    spectator.wait_for_selector("#step-2 .result.is-error")
    run_tool(expert, "set_price", sku="P01", price="44.5")
    expert.wait_for_selector("#last-result >> text=Step 3: set_price")
    shoot(expert, "play-result")

    expert.reload()
    assert "Step 4 is next." in expert.locator(".clock").inner_text()

    console.restart()  # the spectator's socket drops; the expert's environment cache is gone
    spectator.wait_for_selector("#live-indicator[data-state=live]", timeout=30_000)
    expert.reload()
    run_tool(expert, "end_window")
    expert.wait_for_selector("#last-result >> text=Step 4: end_window")
    assert "Day 1 of" in expert.locator(".clock").inner_text()
    spectator.wait_for_selector("#step-4 >> text=end_window")
    indices = [int(i) for i in spectator.locator("#timeline .step").evaluate_all("els => els.map(e => e.dataset.index)")]
    assert indices == [0, 1, 2, 3, 4], "each step exactly once, in order, across the reconnect"
    shoot(spectator, "spectate-live")

    stale = expert.context.new_page()  # a second tab, rendered for step 5 ...
    stale.goto(session_url)
    run_tool(expert, "list_tickets")  # ... which the first tab takes
    expert.wait_for_selector("#last-result >> text=Step 5: list_tickets")
    run_tool(stale, "read_news")
    stale.wait_for_selector(".notice >> text=step 5 is already taken")
    stale.close()

    expert.once("dialog", lambda dialog: dialog.accept())
    expert.click("#finish-session")
    expert.wait_for_url(f"{console.url}{episode_href}")
    assert "finished (agent_stop)" in expert.locator("#episode-status").inner_text()
    spectator.wait_for_selector("#live-indicator[data-state=ended]")

    expert.goto(f"{console.url}/leaderboard/")
    human_row = expert.locator(".leaderboard tr.kind-human", has_text="human:erin").first
    assert human_row.is_visible()
    assert expert.locator(".leaderboard tr.kind-anchor", has_text="smart-triage").first.is_visible()
    shoot(expert, "leaderboard")

    expert.goto(f"{console.url}{episode_href}")
    expert.click(".compare-links a")
    expert.wait_for_selector("tr.first-divergence")
    assert "First divergent step: #1" in expert.locator("#divergence").inner_text()
    shoot(expert, "compare")


def test_researcher_browses_searches_navigates_and_annotates(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/episodes/")
    page.select_option("select[name=agent]", "smart-triage")
    page.wait_for_url(re.compile(r"agent=smart-triage"))
    shoot(page, "episodes")
    page.click("table.episodes tbody a")
    page.wait_for_selector("#step-0")
    assert page.locator("#timeline .step").count() == 50  # one page; the rest loads as it scrolls into view
    page.locator(".more.later").scroll_into_view_if_needed()
    page.wait_for_selector("#step-50")
    for key in "jjjk":  # the first j selects step 0
        page.keyboard.press(key)
    assert page.url.endswith("#step-1") and page.locator("#step-1.current").count() == 1
    page.fill("#episode-search-input", "end_window")
    page.press("#episode-search-input", "Enter")
    page.wait_for_selector("#search-results .hits li")
    shoot(page, "viewer")

    page.goto(page.url.split("#")[0].split("?")[0] + "#step-230")  # a deep link beyond the first page
    page.wait_for_selector("#step-230.current")

    page.click("#diagnose summary")
    page.fill("#diagnose-step", "3")
    page.select_option("select[name=category]", "planning_error")
    page.fill("textarea[name=explanation]", "<b>raised prices</b> before restocking")
    page.select_option("select[name=correction_tool]", "create_purchase_order")
    page.wait_for_selector("[name=correction-supplier_id]")
    page.fill("[name=correction-supplier_id]", "SUP-1")
    page.fill("[name=correction-lines]", "not json")
    page.click("#diagnose button[type=submit]")
    page.wait_for_selector(".field-error >> text=not valid JSON")
    page.fill("[name=correction-lines]", '[{"sku": "P01-BLA-M", "quantity": 40}]')
    page.click("#diagnose button[type=submit]")
    page.wait_for_selector("text=Diagnosis saved.")
    assert "<b>raised prices</b> before restocking" in page.locator("#diagnoses ul.diagnoses").inner_text()  # shown as text
    shoot(page, "viewer-diagnosis")

    for name, path in (("diagnoses", "/diagnoses/"), ("runs", "/runs/"), ("evaluations", "/evaluations/"), ("play-index", "/play/")):
        page.goto(f"{console.url}{path}")
        assert page.locator("h1").is_visible()
        shoot(page, name)


def test_a_researcher_watches_a_rollout_live_until_it_is_cancelled(console: Any, browser: Any, shoot: Any) -> None:
    job = console.api("POST", "/api/v1/rollouts/", {"agent": "smart-triage", "task": "storebench/full-year", "seed": 0, "project": "acme"})
    deadline = time.monotonic() + 60
    while job["episode"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
        job = console.api("GET", f"/api/v1/rollouts/{job['id']}/")
    assert job["episode"] is not None, job
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/episodes/{job['episode']}/")
    page.wait_for_selector("#live-indicator[data-state=live]")
    shown = page.locator("#timeline .step").count()
    # A locator wait, not wait_for_function: the console's CSP forbids the eval that the latter needs.
    page.locator("#timeline .step").nth(shown + 19).wait_for(timeout=60_000)
    shoot(page, "spectate-rollout")
    console.api("POST", f"/api/v1/rollouts/{job['id']}/cancel/")
    page.wait_for_selector("#live-indicator[data-state=ended]", timeout=60_000)
    page.wait_for_timeout(500)  # the last batch of steps lands
    indices = [int(i) for i in page.locator("#timeline .step").evaluate_all("els => els.map(e => e.dataset.index)")]
    assert indices == list(range(indices[0], indices[0] + len(indices))), "no gaps, no duplicates"
    assert "cancelled" in page.locator("#episode-status").inner_text()
