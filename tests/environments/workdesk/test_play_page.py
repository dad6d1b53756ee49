"""The console's play page for the workdesk: a file browser whose files open in editors, saved with write_file."""

from __future__ import annotations

from typing import Any

import pytest

from lab.play.models import HumanSession

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def desk_session(client: Any, role_users: dict[str, Any]) -> tuple[Any, HumanSession]:
    client.force_login(role_users["expert"])
    response = client.post("/play/", {"project": "acme", "task": "workdesk/operations", "seed": "1000"})
    assert response.status_code == 302
    return client, HumanSession.objects.get()


def test_a_player_browses_the_drive_writes_the_deliverable_in_the_editor_and_reads_it_back(desk_session: tuple[Any, HumanSession]) -> None:
    client, session = desk_session
    page = client.get(f"/play/{session.pk}/")
    assert [p["tool"] for p in page.context["view"].panels] == ["list_files", "list_files"]
    assert "out/lead_times.md: not yet" in page.content.decode()
    browser = client.post(f"/play/{session.pk}/submit", {"panel": "0", "expected_index": "1"}, **HTMX).content.decode()
    files = browser.split('id="panel-0"')[1].split("</section>")[0]
    assert "<code>ops/shipments.csv</code>" in files and "Save with write_file" in files and "S-7700" in files
    saved = client.post(f"/play/{session.pk}/submit", {"panel": "0", "expected_index": "2", "path": "out/lead_times.md",
                                                       "content": "## Summary\ndraft\n"}, **HTMX)  # fmt: skip
    assert saved.status_code == 200 and "out/lead_times.md: written" in saved.content.decode()
    read = client.post(f"/play/{session.pk}/submit", {"tool": "read_file", "expected_index": "3", "path": "out/lead_times.md"}, **HTMX)
    assert "1: ## Summary" in read.content.decode()
