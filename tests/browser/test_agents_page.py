"""The Agents page in chromium: a researcher adds a critic and a team using it, a bad team is refused beside the
field, and the list shows the team's roles."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _fill(page: Any, name: str, team: str = "{}", model: str = "smart-triage") -> None:
    page.fill("input[name=name]", name)
    page.fill("input[name=model]", model)
    page.fill("textarea[name=team]", team)
    page.click("#agent-form button[type=submit]")


def test_a_researcher_builds_a_team_on_the_agents_page(console: Any, browser: Any, shoot: Any) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", "rita-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    page.click("nav >> text=Agents")
    page.click("#agent-form summary")
    _fill(page, "rule-critic")
    page.wait_for_url("**/agents/?saved=*")
    page.click("#agent-form summary")
    _fill(page, "triage-team", json.dumps({"critic": {"agent": "rule-critic", "every": -1}}))
    assert "team.critic.every: must be an integer >= 0, got -1" in page.locator("#team-error").inner_text()
    shoot(page, "agents-team-refused")
    page.fill("textarea[name=team]", json.dumps({"critic": {"agent": "rule-critic", "every": 5}, "harness_level": "guided"}))
    page.click("#agent-form button[type=submit]")
    page.wait_for_url("**/agents/?saved=*")
    assert "critic (every 5) · harness guided" in page.locator("#agent-rows").inner_text()
    shoot(page, "agents-team-saved")
    agents = console.api("GET", "/api/v1/agents/")  # a plain list: the agents API is not paginated
    agent = next(a for a in agents if a["name"] == "triage-team")  # type: ignore[attr-defined]
    assert agent["team"] == {"critic": {"agent": "rule-critic", "every": 5}, "harness_level": "guided"}
