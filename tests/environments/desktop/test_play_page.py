"""The console's play page for the desktop: the screenshot panel shows the rendered screen (a click on it clicks
there), the screen panel the accessibility tree, the shell panel the home folder, and a player's clicks and shell
commands go through the same tools as an agent's."""

from __future__ import annotations

from typing import Any

import pytest

from environments import registry
from environments.desktop.widgets import find
from environments.desktop.world import build_world
from lab.play.models import HumanSession
from lab.trajectories.models import Step

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_a_player_opens_the_screen_clicks_and_uses_the_shell(client: Any, role_users: dict[str, Any]) -> None:
    client.force_login(role_users["expert"])
    assert client.post("/play/", {"project": "acme", "task": "desktop/change-setting", "seed": "1000"}).status_code == 302
    session = HumanSession.objects.get()
    page = client.get(f"/play/{session.pk}/")
    assert [p["tool"] for p in page.context["view"].panels] == ["observe", "observe", "shell"]
    assert '<input type="image" name="click" src="/api/v1/screenshots/' in page.content.decode()  # the opening screen
    screen = client.post(f"/play/{session.pk}/submit", {"panel": "1", "expected_index": "1"}, **HTMX).content.decode()
    assert "[launch.settings] button" in screen.split('id="panel-1"')[1].split("</section>")[0]
    env = registry.make("desktop/change-setting", 1000)
    env.reset()
    launcher = find(env.screen(), "launch.settings")  # type: ignore[attr-defined]
    assert launcher is not None
    left, top, width, height = launcher.bounds
    x, y = left + width // 2, top + height // 2
    clicked = client.post(
        f"/play/{session.pk}/submit", {"panel": "0", "expected_index": "2", "screen.x": str(x), "screen.y": str(y)}, **HTMX
    )
    assert clicked.status_code == 200 and "opened settings" in clicked.content.decode()
    step = Step.objects.get(episode=session.episode, index=2)
    assert step.tool_calls[0]["arguments"] == {"x": x, "y": y} and step.extra["meta"]["screenshot"]  # the new screen, stored
    shell = client.post(f"/play/{session.pk}/submit", {"tool": "shell", "expected_index": "3", "command": "settings list"}, **HTMX)
    theme = build_world(1000).settings["display.theme"]
    assert shell.status_code == 200 and f"display.theme={theme}" in shell.content.decode()
