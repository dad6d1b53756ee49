"""The viewer's role lanes: lanes from the roles present, advice and consultations linked to the steps they shaped."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.console.lanes import episode_lanes, steps_link
from lab.console.selectors import steps_window
from lab.trajectories.services import episodes_ingest
from tests.lab.console.conftest import team_steps

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def _ingest(project: Any, user: Any, steps: list[dict[str, Any]], task: str = "team") -> Any:
    record = new_record(header={"env": "toyenv", "task": task, "seed": 0, "source": "upload"}, steps=steps)
    return episodes_ingest(project=project, records=[record], user=user)[0].episode


def test_it_puts_each_role_in_its_own_lane_in_the_builtin_order(team_episode: Any) -> None:
    assert episode_lanes(team_episode) == ["actor", "critic", "consultant", "harness"]
    steps = steps_link(team_episode, steps_window(team_episode, 0, 12), episode_lanes(team_episode))
    assert [(s["index"], s["role"], s["lane"]) for s in steps[:6]] == [
        (0, "actor", 0),
        (1, "critic", 1),
        (2, "actor", 0),
        (3, "consultant", 2),
        (4, "actor", 0),
        (5, "harness", 3),
    ]


def test_workflow_roles_follow_the_builtins_by_name(project_a: Any, role_users: dict[str, Any]) -> None:
    steps = [
        make_step(index=0, message="plan", role="generator"),
        make_step(index=1, message="built", role="builder"),
        make_step(index=2, message="go"),
        make_step(index=3, source="env", message="observation"),
    ]
    episode = _ingest(project_a, role_users["owner"], steps, task="workflow")
    assert episode_lanes(episode) == ["actor", "env", "builder", "generator"]


def test_it_links_advice_and_consultations_to_the_actor_steps_they_shaped(team_episode: Any) -> None:
    steps = {s["index"]: s for s in steps_link(team_episode, steps_window(team_episode, 0, 12), episode_lanes(team_episode))}
    assert steps[1]["influence"] == {"kind": "advice", "on": 0, "to": 2, "trigger": "schedule"}
    assert steps[2]["influenced_by"] == [{"kind": "advice", "from": 1, "role": "critic"}]
    assert steps[2]["consulted"] == [{"call": "q0", "answer": 3}]
    assert steps[3]["influence"] == {"kind": "consultation", "on": 2, "to": 4, "trigger": None}
    assert steps[4]["influenced_by"] == [{"kind": "consultation", "from": 3, "role": "consultant"}]


def test_advice_at_the_end_of_a_page_links_to_the_actor_step_on_the_next(team_episode: Any) -> None:
    window = steps_window(team_episode, 0, 2)  # the actor step and the critic's advice; the actor's next step is not loaded
    [_, advice] = steps_link(team_episode, window, episode_lanes(team_episode))
    assert advice["influence"]["to"] == 2


def test_the_viewer_renders_lanes_and_the_advice_link(login: Any, role_users: dict[str, Any], team_episode: Any) -> None:
    html = login(role_users["viewer"]).get(f"/episodes/{team_episode.pk}/").content.decode()
    assert 'class="timeline lanes lanes-4"' in html and 'id="lane-heads"' in html
    assert 'class="step src-agent role-critic lane-1"' in html
    assert 'href="?at=0#step-0" class="advises">step 0</a>' in html and 'href="?at=2#step-2" class="influenced">actor step 2</a>' in html
    assert "answer #3</a>" in html
    more = login(role_users["viewer"]).get(f"/episodes/{team_episode.pk}/steps", {"start": 0, "stop": 4}, **HTMX).content.decode()
    assert "role-consultant lane-2" in more


def test_a_plain_episode_renders_without_lanes_as_before(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    steps = [make_step(index=i, tool_calls=[{"id": f"c{i}", "name": "lookup", "arguments": {}}]) for i in range(3)]
    episode = _ingest(project_a, role_users["owner"], steps, task="plain")
    assert episode_lanes(episode) == []
    html = login(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    assert "lanes" not in html and 'class="step src-agent" id="step-0"' in html and "role-tag" not in html


def test_a_long_team_episode_pages_its_lanes(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    episode = _ingest(project_a, role_users["owner"], team_steps(40), task="long-team")  # 240 steps
    client = login(role_users["viewer"])
    html = client.get(f"/episodes/{episode.pk}/", {"at": 120}).content.decode()
    assert 'id="step-100"' in html and 'id="step-149"' in html and 'id="step-150"' not in html and "lanes-4" in html
    more = client.get(f"/episodes/{episode.pk}/steps", {"start": 150, "dir": "next"}, **HTMX).content.decode()
    assert 'id="step-150"' in more and "role-harness lane-3" in more
