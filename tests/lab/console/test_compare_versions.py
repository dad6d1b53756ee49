"""A human's episode beside every agent of the same task and seed: matched on the environment and task key (a task
played under two environment versions is two task rows), the same version first, another version said (issue 44:
the compare page said "not the same task and seed (X seed 61 vs X seed 61)")."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def _played(project: Any, user: Any, *, version: str, agent: str, composite: float) -> Any:
    steps = [
        make_step(
            index=0,
            message="",
            tool_calls=[{"id": "a", "name": "look", "arguments": {}}],
            results=[{"call_id": "a", "content": "ok", "is_error": False}],
        )
    ]
    header = {
        "env": "toyenv",
        "env_version": version,
        "task": "shop",
        "seed": 61,
        "source": "upload",
        "policy": {"name": agent},
        "score": {"composite": composite, "passed": composite >= 0.5},
    }
    return episodes_ingest(project=project, records=[new_record(header=header, steps=steps)], user=user)[0].episode


def test_an_episode_of_another_environment_version_is_the_same_task_and_seed_and_says_its_version(
    login: Any, role_users: dict[str, Any], project_a: Any
) -> None:
    owner = role_users["owner"]
    human = _played(project_a, owner, version="2.0", agent="erin", composite=0.4)
    same = _played(project_a, owner, version="2.0", agent="smart-triage", composite=0.3)
    older = _played(project_a, owner, version="1.0", agent="legacy-anchor", composite=0.9)
    assert human.task_id != older.task_id  # two task rows: one per environment version
    client = login(role_users["viewer"])
    links = client.get(f"/episodes/{human.pk}/").content.decode().split('class="compare-links"', 1)[1].split("</p>", 1)[0]
    assert links.index(f"b={same.pk}") < links.index(f"b={older.pk}")  # the same version first, though it scores less
    assert "version 1.0" in links and "version 2.0" not in links
    html = client.get("/compare/", {"a": human.pk, "b": older.pk}).content.decode()
    notice = html.split('id="compare-mismatch"', 1)[1].split("</p>", 1)[0]
    assert "The same task and seed under two environment versions (toyenv 2.0 vs 1.0)" in notice and "not of the same task" not in html
    assert 'id="compare-mismatch"' not in client.get("/compare/", {"a": human.pk, "b": same.pk}).content.decode()


def test_an_episode_without_a_recorded_version_is_not_said_to_be_of_another_version(
    login: Any, role_users: dict[str, Any], project_a: Any
) -> None:
    owner = role_users["owner"]
    human = _played(project_a, owner, version="2.0", agent="erin", composite=0.4)
    anchor = _played(project_a, owner, version="", agent="stock-anchor", composite=0.8)  # anchors' records carry no version
    older = _played(project_a, owner, version="1.0", agent="legacy-anchor", composite=0.9)
    client = login(role_users["viewer"])
    links = client.get(f"/episodes/{human.pk}/").content.decode().split('class="compare-links"', 1)[1].split("</p>", 1)[0]
    assert "stock-anchor (0.800)</a>" in links and "unversioned" not in links
    assert links.index(f"b={anchor.pk}") < links.index(f"b={older.pk}")  # unknown is not known to differ: it comes first
    assert "legacy-anchor (0.900, version 1.0)" in links
    from_anchor = client.get(f"/episodes/{anchor.pk}/").content.decode().split('class="compare-links"', 1)[1].split("</p>", 1)[0]
    assert "version" not in from_anchor  # beside an unversioned episode no version is known to differ
    turns = client.get(f"/episodes/{human.pk}/turns").content.decode()
    heads = {pk: turns.split(f'data-episode="{pk}"', 1)[1].split("</th>", 1)[0] for pk in (human.pk, anchor.pk, older.pk)}
    assert "version" not in heads[anchor.pk] and "unversioned" not in turns
    assert '<span class="tag">version 1.0</span>' in heads[older.pk]
    assert 'id="compare-mismatch"' not in client.get("/compare/", {"a": human.pk, "b": anchor.pk}).content.decode()
