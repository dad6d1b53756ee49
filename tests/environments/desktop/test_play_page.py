"""The console's play page for the desktop: the screen panel shows the accessibility tree, the shell panel the
home folder, and a player's click and shell command go through the same tools as an agent's."""

from __future__ import annotations

from typing import Any

import pytest

from environments.desktop.world import build_world
from lab.play.models import HumanSession

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_a_player_opens_the_screen_clicks_and_uses_the_shell(client: Any, role_users: dict[str, Any]) -> None:
    client.force_login(role_users["expert"])
    assert client.post("/play/", {"project": "acme", "task": "desktop/change-setting", "seed": "1000"}).status_code == 302
    session = HumanSession.objects.get()
    page = client.get(f"/play/{session.pk}/")
    assert [p["tool"] for p in page.context["view"].panels] == ["observe", "shell"]
    screen = client.post(f"/play/{session.pk}/submit", {"panel": "0", "expected_index": "1"}, **HTMX).content.decode()
    assert "[launch.settings] button" in screen.split('id="panel-0"')[1].split("</section>")[0]
    clicked = client.post(f"/play/{session.pk}/submit", {"tool": "click", "expected_index": "2", "id": "launch.settings"}, **HTMX)
    assert clicked.status_code == 200 and "opened settings" in clicked.content.decode()
    shell = client.post(f"/play/{session.pk}/submit", {"tool": "shell", "expected_index": "3", "command": "settings list"}, **HTMX)
    theme = build_world(1000).settings["display.theme"]
    assert shell.status_code == 200 and f"display.theme={theme}" in shell.content.decode()
