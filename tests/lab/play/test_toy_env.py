"""An environment declared only in tests/ (tests/lab/play/toy.py) is playable through the console unchanged:
listed, started, its panels opened as charged, recorded tool calls and drawn by their renderers, played to the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from environments.contract import check_task
from lab.play.models import HumanSession
from lab.trajectories.models import Episode, Step
from tests.lab.play.toy import TASK, toy_registered

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    with toy_registered():
        yield


@pytest.fixture
def started(client: Any, role_users: dict[str, Any]) -> HumanSession:
    client.force_login(role_users["expert"])
    response = client.post("/play/", {"project": "acme", "task": TASK.id, "seed": "1"})
    assert response.status_code == 302, response.content.decode()[:500]
    return HumanSession.objects.get()


def test_the_toy_keeps_the_environment_contract_including_its_panels() -> None:
    assert check_task(TASK.id, seed=1, steps=6) == []


def test_the_play_page_lists_the_toy_task(client: Any, role_users: dict[str, Any]) -> None:
    client.force_login(role_users["expert"])
    assert f'<option value="{TASK.id}"' in client.get("/play/").content.decode()


def test_a_toy_session_shows_its_status_line_and_unopened_panels(client: Any, started: HumanSession) -> None:
    response = client.get(f"/play/{started.pk}/")
    html = response.content.decode()
    assert [(p["title"], p["renderer"], p["opened"]) for p in response.context["view"].panels] == [
        ("Counters", "table", False),
        ("Total", "chart", False),
        ("Notes", "files", False),
        ("Screen", "image", False),
    ]
    assert '<span id="calls-left" class="status-part"><strong>5 of 5 calls left</strong></span>' in html
    assert html.count("Not opened yet in this session") == 4
    assert Episode.objects.get(pk=started.episode_id).step_count == 1  # looking at the page spent nothing


def test_opening_a_panel_is_a_charged_recorded_step_drawn_as_a_table(client: Any, started: HumanSession) -> None:
    response = client.post(f"/play/{started.pk}/submit", {"panel": "0", "expected_index": "1"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    step = Step.objects.get(episode=started.episode, index=1)
    assert (step.source, step.tool_calls[0]["name"], step.tool_calls[0]["arguments"]) == ("agent", "look", {})
    assert "4 of 5 calls left" in html and "Step 1: look" in html
    assert (
        "<th>name</th><th>value</th>" in html
        and '<td>red</td><td class="num">1</td>' in html
        and '<td>blue</td><td class="num">0</td>' in html
    )
    assert 'name="expected_index" value="2"' in html


def test_a_tool_call_then_the_chart_panel_shows_the_totals_over_time(client: Any, started: HumanSession) -> None:
    client.post(f"/play/{started.pk}/submit", {"tool": "add", "name": "blue", "n": "4", "expected_index": "1"}, **HTMX)
    client.post(f"/play/{started.pk}/submit", {"tool": "add", "name": "red", "n": "2", "expected_index": "2"}, **HTMX)
    html = client.post(f"/play/{started.pk}/submit", {"panel": "1", "expected_index": "3"}, **HTMX).content.decode()
    assert list(Step.objects.filter(episode=started.episode).values_list("index", flat=True)) == [0, 1, 2, 3]
    assert "total: <strong>7</strong>" in html and "(range 5 – 7)" in html
    assert 'points="0.0,120.0 320.0,0.0"' in html  # two points, lowest bottom-left, highest top-right
    assert "2 of 5 calls left" in html


def test_an_unknown_panel_is_refused_by_name_and_spends_nothing(client: Any, started: HumanSession) -> None:
    response = client.post(f"/play/{started.pk}/submit", {"panel": "7", "expected_index": "1"}, **HTMX)
    assert response.status_code == 400 and "is not a panel of toycount; it has 4" in response.content.decode()
    assert Episode.objects.get(pk=started.episode_id).step_count == 1


def test_spending_the_toys_budget_ends_the_session_with_its_own_reason(client: Any, started: HumanSession) -> None:
    for index in range(1, 6):
        response = client.post(f"/play/{started.pk}/submit", {"tool": "add", "name": "red", "n": "5", "expected_index": str(index)})
    assert response.status_code == 302 and response["Location"] == f"/episodes/{started.episode_id}/"
    episode = Episode.objects.get(pk=started.episode_id)
    assert (episode.status, episode.termination_reason, episode.composite) == ("finished", "max_steps", 1.0)


def test_a_files_panel_saves_through_its_action_tool_and_shows_the_saved_file(client: Any, started: HumanSession) -> None:
    html = client.post(f"/play/{started.pk}/submit", {"panel": "2", "expected_index": "1"}, **HTMX).content.decode()
    assert '<textarea name="content" rows="8" aria-label="todo.txt">count</textarea>' in html and "Save with write" in html
    client.post(f"/play/{started.pk}/submit", {"panel": "2", "path": "todo.txt", "content": "done", "expected_index": "2"}, **HTMX)
    step = Step.objects.get(episode=started.episode, index=2)
    assert (step.tool_calls[0]["name"], step.tool_calls[0]["arguments"]) == ("write", {"path": "todo.txt", "content": "done"})
    html = client.post(f"/play/{started.pk}/submit", {"panel": "2", "expected_index": "3"}, **HTMX).content.decode()
    assert 'aria-label="todo.txt">done</textarea>' in html


def test_a_click_on_an_image_panel_calls_its_action_tool_with_the_coordinates(client: Any, started: HumanSession) -> None:
    html = client.post(f"/play/{started.pk}/submit", {"panel": "3", "expected_index": "1"}, **HTMX).content.decode()
    assert '<input type="image" name="click" src="data:image/png;base64,' in html
    response = client.post(f"/play/{started.pk}/submit", {"panel": "3", "click.x": "80", "click.y": "4", "expected_index": "2"})
    assert response.status_code == 302  # a plain post, back to the page
    step = Step.objects.get(episode=started.episode, index=2)
    assert (step.tool_calls[0]["name"], step.tool_calls[0]["arguments"]) == ("click", {"x": 80, "y": 4})
    assert "total 2" in client.get(f"/play/{started.pk}/").content.decode()  # seed 1: red 1, and the click added blue 1
