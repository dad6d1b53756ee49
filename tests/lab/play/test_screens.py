"""Playing an environment with a screen: every step keeps a screenshot reference, the panel shows the current
screen, and a click on it (scaled to screen pixels by the page's script, or raw without it) is a click call."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from environments.meta import EnvMeta, Panel
from lab.play.models import HumanSession
from lab.screenshots.models import Screenshot
from lab.trajectories.models import Step
from tests.lab.play.screendesk import TASK, ScreenDeskEnv, screendesk_registered

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _screendesk() -> Iterator[None]:
    with screendesk_registered():
        yield


@pytest.fixture
def expert_client(client: Any, role_users: dict[str, Any]) -> Any:
    client.force_login(role_users["expert"])
    return client


@pytest.fixture
def started(expert_client: Any) -> HumanSession:
    response = expert_client.post("/play/", {"project": "acme", "task": "screendesk/press", "seed": "0"})
    assert response.status_code == 302, response.content.decode()[:500]
    return HumanSession.objects.get()


def _ref(session: HumanSession, index: int) -> str:
    return Step.objects.get(episode=session.episode, index=index).extra["meta"]["screenshot"]


def test_the_opening_step_is_recorded_with_its_screenshot(started: HumanSession) -> None:
    shot = Screenshot.objects.get(project=started.episode.project, sha256=_ref(started, 0))
    image = Image.open(io.BytesIO(bytes(shot.png)))
    assert image.size == (1280, 800) and (shot.width, shot.height, shot.size) == (1280, 800, len(bytes(shot.png)))


def test_the_panel_shows_the_stored_screenshot_as_a_clickable_picture(expert_client: Any, started: HumanSession) -> None:
    html = expert_client.get(f"/play/{started.pk}/").content.decode()
    url = f"/api/v1/screenshots/{_ref(started, 0)}?project={started.episode.project_id}"
    assert f'<input type="image" name="click" src="{url}" width="1280" height="800"' in html
    assert 'data-screen-width="1280" data-screen-height="800"' in html and 'name="screen.x"' in html
    assert expert_client.get(url).status_code == 200  # the browser can load it with the player's session


def test_a_click_in_screen_pixels_calls_click_and_records_the_new_screen(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(
        f"/play/{started.pk}/submit",
        {"panel": "0", "expected_index": "1", "screen.x": "150", "screen.y": "120", "click.x": "75", "click.y": "60"},
        **HTMX,
    )
    assert response.status_code == 200
    step = Step.objects.get(episode=started.episode, index=1)
    assert step.tool_calls[0]["name"] == "click" and step.tool_calls[0]["arguments"] == {"x": 150, "y": 120}
    assert step.results[0]["content"] == {"clicked": "plus"}
    assert _ref(started, 1) != _ref(started, 0)  # "Pressed 1" now
    assert f"/api/v1/screenshots/{_ref(started, 1)}?project=" in response.content.decode()


def test_without_the_script_the_pictures_own_click_coordinates_go(expert_client: Any, started: HumanSession) -> None:
    expert_client.post(
        f"/play/{started.pk}/submit",
        {"panel": "0", "expected_index": "1", "screen.x": "", "screen.y": "", "click.x": "10", "click.y": "20"},
    )
    assert Step.objects.get(episode=started.episode, index=1).tool_calls[0]["arguments"] == {"x": 10, "y": 20}
    bad = expert_client.post(
        f"/play/{started.pk}/submit", {"panel": "0", "expected_index": "2", "screen.x": "left", "screen.y": "1"}, **HTMX
    )
    assert bad.status_code == 400 and "the click lost its coordinates" in bad.content.decode()


def test_the_same_screen_is_stored_once(expert_client: Any, started: HumanSession) -> None:
    for index in (1, 2):  # clicks on the empty desktop change nothing on the screen
        expert_client.post(
            f"/play/{started.pk}/submit", {"panel": "0", "expected_index": str(index), "screen.x": "900", "screen.y": "700"}, **HTMX
        )
    assert _ref(started, 0) == _ref(started, 1) == _ref(started, 2)
    assert Screenshot.objects.filter(project=started.episode.project).count() == 1


def test_typing_through_a_tool_form_records_a_screenshot_too(expert_client: Any, started: HumanSession) -> None:
    expert_client.post(f"/play/{started.pk}/submit", {"tool": "type", "expected_index": "1", "text": "hello"}, **HTMX)
    assert _ref(started, 1) != _ref(started, 0)


def test_past_the_budget_steps_are_kept_without_a_screenshot_and_the_panel_renders_the_screen(
    expert_client: Any, started: HumanSession, settings: Any
) -> None:
    settings.PRACTICUM_SCREENSHOT_BUDGET_BYTES = Screenshot.objects.get().size  # full: nothing new fits
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "type", "expected_index": "1", "text": "x"}, **HTMX)
    meta = Step.objects.get(episode=started.episode, index=1).extra["meta"]
    assert "screenshot" not in meta and "its budget of" in meta["screenshot_skipped"]
    html = response.content.decode()
    assert 'src="data:image/png;base64,' in html and "Not stored: project acme holds" in html


def test_a_screenshot_panel_needs_an_environment_with_a_screen() -> None:
    meta = EnvMeta(
        env="screendesk",
        playable=True,
        panels=(Panel("Screen", "wait", renderer="screenshot", action_tool="click"),),
        screen="environments.desktop.render:render_png",
    )
    assert meta.problems(ScreenDeskEnv(TASK, 0)) == []

    class Blind(ScreenDeskEnv):
        screen = None  # type: ignore[assignment]

    assert meta.problems(Blind(TASK, 0)) == ["panel 'Screen': the screenshot renderer needs Blind.screen(), the root of its widget tree"]
