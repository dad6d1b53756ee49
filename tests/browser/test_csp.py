"""The console under its Content-Security-Policy in Debian's chromium: every page loads, with its scripts, without
a single CSP violation or console error."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Recorded in the page itself: chromium also logs each violation as a console error, collected too.
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""
PAGES = [
    "/",
    "/episodes/",
    "/leaderboard/",
    "/play/",
    "/agents/",
    "/runs/",
    "/evaluations/",
    "/diagnoses/",
    "/diagnoses/jobs/",
    "/api/docs/",
]


def _counts(message: Any) -> bool:
    """Every console error counts, a missing favicon's 404 too (base.html links the console's own)."""
    return bool(message.type == "error")


def _watched_page(browser: Any, console: Any) -> tuple[Any, list[str]]:
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    page.add_init_script(WATCH_VIOLATIONS)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(f"{page.url}: {message.text}") if _counts(message) else None)
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", "rita-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"{console.url}/")
    return page, errors


def _visit(page: Any, url: str) -> list[str]:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")
    return [f"{url}: {v}" for v in page.evaluate("window.__violations")]


def test_every_console_page_runs_under_the_csp_without_violations(console: Any, browser: Any) -> None:
    page, errors = _watched_page(browser, console)
    violations: list[str] = []
    for path in PAGES:
        violations += _visit(page, f"{console.url}{path}")
    assert page.locator("#swagger-ui .info .title").inner_text().startswith("Practicum API")  # its script ran

    episode = console.api("GET", "/api/v1/episodes/")["results"][0]["id"]  # the seeded smart-triage run
    violations += _visit(page, f"{console.url}/episodes/{episode}/")
    page.wait_for_selector("#step-1")
    widths = page.locator(".credit-bar").evaluate_all("bars => bars.map(b => b.style.width)")
    assert widths and all(w.endswith("%") for w in widths)  # set by console.js from data-width-percent
    violations += _visit(page, f"{console.url}/compare/?a={episode}&b={episode}")

    page.goto(f"{console.url}/play/")
    page.select_option("select[name=task]", "storebench/cash-crunch")
    page.fill("input[name=seed]", "3")
    page.click("form.inline-form button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    violations += [f"{page.url}: {v}" for v in page.evaluate("window.__violations")]
    page.once("dialog", lambda dialog: dialog.dismiss())  # the finish form asks first (data-confirm, no inline handler)
    page.click("#finish-session")
    assert re.search(r"/play/\d+/$", page.url)  # dismissed: still playing

    assert violations == [] and errors == []
