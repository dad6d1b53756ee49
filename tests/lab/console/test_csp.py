"""Every console page carries the strict Content-Security-Policy and holds nothing it would block: no inline
script, style block, style attribute or event handler (tests/browser/test_csp.py checks the same in chromium)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lab.play.services import play_session_start
from lab.runs.models import TrainingRun

pytestmark = pytest.mark.django_db

PAGES = ["/", "/episodes/", "/leaderboard/", "/play/", "/runs/", "/evaluations/", "/diagnoses/", "/diagnoses/jobs/", "/api/docs/"]
INLINE = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I),
    "style block": re.compile(r"<style\b", re.I),
    "style attribute": re.compile(r"<[^>]+\sstyle\s*=", re.I),
    "event handler": re.compile(r"<[^>]+\son[a-z]+\s*=", re.I),
}


def _inline_code(html: str) -> list[str]:
    return [f"{kind}: {match.group(0)[:80]}" for kind, pattern in INLINE.items() for match in pattern.finditer(html)]


def _checked(client: Any, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    policy = response["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy and "object-src 'none'" in policy, url
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    html = response.content.decode()
    assert _inline_code(html) == [], url
    return html


def test_every_console_page_has_a_strict_policy_and_no_inline_code(
    login: Any, role_users: dict[str, Any], store_episodes: Any, project_a: Any
) -> None:
    client = login(role_users["researcher"])
    for url in PAGES:
        _checked(client, url)
    smart, idle = store_episodes["smart"], store_episodes["idle"]
    viewer = _checked(client, f"/episodes/{smart.pk}/")
    _checked(client, f"/episodes/{smart.pk}/steps?start=0")
    _checked(client, f"/compare/?a={smart.pk}&b={idle.pk}")
    runs = [TrainingRun.objects.create(project=project_a, name=f"run-{i}", recipe="sft", base_model="tiny") for i in range(2)]
    _checked(client, f"/runs/compare?ids={runs[0].pk},{runs[1].pk}")
    assert 'class="credit-bar" data-width-percent="' in viewer  # sized by console.js, not by a style attribute
    session = play_session_start(user=role_users["expert"], project=project_a, task_id="storebench/cash-crunch", seed=1)
    play = _checked(login(role_users["expert"]), f"/play/{session.pk}/")
    assert 'data-confirm="End the session now?' in play


def test_the_login_page_and_the_api_docs_script_are_served_under_the_policy(client: Any, alice: Any) -> None:
    _checked(client, "/accounts/login/")
    client.force_login(alice)
    docs = _checked(client, "/api/docs/")
    assert 'src="/api/docs/?script=' in docs
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()


def test_websockets_to_the_same_host_are_allowed(client: Any, alice: Any) -> None:
    client.force_login(alice)
    policy = client.get("/", HTTP_HOST="localhost").headers["Content-Security-Policy"]
    assert "connect-src 'self' ws://localhost wss://localhost;" in policy and "frame-ancestors 'none'" in policy
