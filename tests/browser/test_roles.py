"""In Debian's chromium: a team episode's lanes in the viewer, with the critic's advice linked to the actor step it
shaped, and a comparison of role configurations launched from the console form (screenshots under test-output/)."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import new_record
from tests.browser.conftest import ROOT
from tests.browser.test_console_e2e import login
from tests.lab.console.conftest import TEAM, team_roles, team_steps

pytestmark = [pytest.mark.browser, pytest.mark.slow]
OUT = ROOT / "test-output"


def test_the_viewer_shows_a_team_episode_in_lanes(console: Any, browser: Any) -> None:
    steps = team_steps(3)
    header = {
        "env": "toyenv",
        "task": "team-lanes",
        "seed": 0,
        "source": "upload",
        "policy": {"name": "team-agent"},
        "team": TEAM,
        "roles": team_roles(steps),
    }
    uploaded = console.api("POST", "/api/v1/episodes/?project=acme", new_record(header=header, steps=steps))
    episode = uploaded["episodes"][0]["id"]
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/episodes/{episode}/")
    heads = page.locator("#lane-heads .lane-head").all_inner_texts()
    assert [h.lower() for h in heads] == ["actor", "critic", "consultant", "harness"]
    actor, critic = page.locator("#step-0").bounding_box(), page.locator("#step-1").bounding_box()
    assert critic["x"] > actor["x"] + actor["width"] - 2, (actor, critic)  # the critic's turn sits in its own column
    page.locator("#step-1 a.influenced").click()
    page.wait_for_url("**#step-2")
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "roles-lanes.png"), full_page=True)


def test_a_researcher_compares_role_configurations_from_the_console(console: Any, browser: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/evaluations/")
    page.locator("#comparison-form summary").click()
    form = page.locator("#comparison-form form")
    form.locator("[name=base]").fill("do-nothing")
    form.locator("[name=variants]").fill("naive-restock\nsmart-triage")
    form.locator("[name=task_set]").fill("storebench/payment-outage")
    form.locator("[name=seeds]").fill("0,1")
    form.get_by_role("button", name="Count the jobs").click()  # the count first, as the form offers (2 variants + base, 2 seeds)
    page.wait_for_load_state()
    assert "6" in page.locator("#comparison-preview").inner_text()
    page.locator("#comparison-form").get_by_role("button", name="Start comparison").click()
    page.wait_for_url("**/evaluations/comparisons/*/")
    page.wait_for_function(
        "() => !document.querySelector('#comparison-body[hx-get]') && document.body.innerText.includes('n=2')", timeout=180_000
    )
    text = page.locator("#comparison-table").inner_text()
    assert "smart-triage" in text and "n=2" in text and "finished" in text
    page.screenshot(path=str(OUT / "roles-comparison.png"), full_page=True)
