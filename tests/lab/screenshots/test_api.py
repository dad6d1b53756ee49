"""GET /api/v1/screenshots/<sha256>: the PNG to members of its project, 404 to everyone else, 400 for a bad digest."""

from __future__ import annotations

from typing import Any

import pytest

from lab.screenshots.services import screenshot_store
from tests.lab.screenshots.test_services import png

pytestmark = pytest.mark.django_db


@pytest.fixture
def shot(project_a: Any) -> Any:
    return screenshot_store(project=project_a, png=png("purple"))


def test_a_member_gets_the_png(alice_api: Any, shot: Any) -> None:
    response = alice_api.get(f"/api/v1/screenshots/{shot.sha256}")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content == png("purple") and "immutable" in response["Cache-Control"]


def test_a_browser_session_names_the_project(client: Any, alice: Any, shot: Any, project_a: Any) -> None:
    client.force_login(alice)
    assert client.get(f"/api/v1/screenshots/{shot.sha256}?project={project_a.pk}").content == png("purple")
    assert client.get(f"/api/v1/screenshots/{shot.sha256}?project=acme").status_code == 200


def test_other_projects_cannot_read_it(api: Any, bob: Any, project_b: Any, shot: Any) -> None:
    bob_api = api(bob, project_b)
    assert bob_api.get(f"/api/v1/screenshots/{shot.sha256}").status_code == 404  # not in bravo
    assert bob_api.get(f"/api/v1/screenshots/{shot.sha256}?project=acme").json()["error"]["code"] == "not_found"


def test_a_malformed_digest_is_a_400_naming_it(alice_api: Any) -> None:
    response = alice_api.get("/api/v1/screenshots/not-a-digest")
    assert response.status_code == 400 and "sha256='not-a-digest' is not 64 lowercase hex digits" in response.json()["error"]["message"]
    assert alice_api.get(f"/api/v1/screenshots/{'0' * 64}").status_code == 404
