"""Compare across role configurations: each side's team and per-role accounting beside the aligned steps."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def test_compare_shows_the_team_and_roles_of_each_side(login: Any, role_users: dict[str, Any], project_a: Any, team_episode: Any) -> None:
    plain = new_record(
        header={"env": "toyenv", "task": "team", "seed": 0, "source": "upload"},
        steps=[make_step(index=0, tool_calls=[{"id": "a0", "name": "lookup", "arguments": {"n": 0}}])],
    )
    other = episodes_ingest(project=project_a, records=[plain], user=role_users["owner"])[0].episode
    response = login(role_users["viewer"]).get("/compare/", {"a": team_episode.pk, "b": other.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert (
        "<th>Team</th>" in html
        and "<caption>roles</caption>" in html
        and "plain agent" in html
        and "&quot;harness_level&quot;: &quot;guided&quot;" in html
    )
    rows = {r["role"]: (r["a"], r["b"]) for r in response.context["role_rows"]}
    assert list(rows) == ["actor", "critic", "consultant", "harness"]
    assert '<span class="tag role-tag role-critic">critic</span>' in html  # each aligned step says whose turn it was
    assert rows["actor"][0]["turns"] == 6 and rows["consultant"][0]["cost"] == pytest.approx(0.04) and rows["critic"][1] is None


def test_compare_of_two_plain_episodes_has_no_team_section(login: Any, role_users: dict[str, Any], store_episodes: Any) -> None:
    html = login(role_users["viewer"]).get("/compare/", {"a": store_episodes["smart"].pk, "b": store_episodes["idle"].pk}).content.decode()
    assert 'id="compare-teams"' not in html and 'id="compare-rows"' in html
