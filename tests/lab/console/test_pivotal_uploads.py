"""The pivotal search on uploaded episodes (issue 44): it runs on every failed episode whose world this installation
can rebuild and replay, and says why not on the others, on the viewer page and when posted; never a 500."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lab.trajectories import imports
from tests.lab.console.conftest import anchor_record

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "ingest" / "fixtures"


def _upload(project: Any, user: Any, data: bytes, filename: str, fmt: str = "auto") -> list[Any]:
    return [o.episode for o in imports.upload_ingest(project=project, user=user, data=data, filename=filename, fmt=fmt).outcomes]


def _native(project: Any, user: Any, record: dict[str, Any]) -> Any:
    [episode] = _upload(project, user, json.dumps(record).encode(), "episode.json", "native")
    return episode


def _unavailable(page: str) -> str:
    return page.split('id="pivotal-unavailable">')[1].split("</p>")[0]


def test_an_uploaded_storebench_episode_gets_its_pivotal_step(login: Any, alice: Any, project_a: Any) -> None:
    episode = _native(project_a, alice, anchor_record("do-nothing"))
    assert episode.provenance == "upload" and episode.passed is False
    client = login(alice)
    assert 'id="pivotal-form"' in client.get(f"/episodes/{episode.pk}/").content.decode()
    response = client.post(f"/episodes/{episode.pk}/pivotal", {"anchor": ""})
    episode.refresh_from_db()
    assert response.status_code == 302 and episode.meta["pivotal"]["reason"] == "found"
    assert response["Location"] == f"/episodes/{episode.pk}/?at={episode.meta['pivotal']['step']}#step-{episode.meta['pivotal']['step']}"


def test_an_upload_from_another_benchmark_says_there_is_no_environment_to_replay(login: Any, alice: Any, project_a: Any) -> None:
    data = (FIXTURES / "tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0315101500.json").read_bytes()
    failed = next(e for e in _upload(project_a, alice, data, "tau.json") if e.passed is False)
    client = login(alice)
    page = client.get(f"/episodes/{failed.pk}/").content.decode()
    assert 'id="pivotal-form"' not in page
    assert _unavailable(page).startswith(
        "No pivotal search here: its environment &#x27;tau-bench&#x27; is not installed here, so there is no"
    )
    response = client.post(f"/episodes/{failed.pk}/pivotal", {"anchor": ""})
    assert response.status_code == 400
    assert f"No pivotal search on episode {failed.pk}: its environment &#x27;tau-bench&#x27; is not installed" in response.content.decode()


def test_a_record_whose_states_do_not_replay_is_refused_with_the_step_not_a_500(
    login: Any, alice: Any, project_a: Any, role_users: Any, client: Any
) -> None:
    record = copy.deepcopy(anchor_record("do-nothing"))
    for step in record["steps"]:
        step["state_hash"] = "0" * 16
    episode = _native(project_a, alice, record)
    page = login(alice).post(f"/episodes/{episode.pk}/pivotal", {"anchor": ""})
    assert page.status_code == 422
    text = page.content.decode()
    assert (
        f"no pivotal search on episode {episode.pk}: its recorded steps do not replay in storebench here (state hash diverged at step 0"
        in text
    )
    episode.refresh_from_db()
    assert "pivotal" not in episode.meta
    from lab.projects.services import api_key_issue

    key = api_key_issue(project=project_a, user=role_users["owner"], name="k")[1]
    api = client.post(
        "/api/v1/diagnoses/pivotal/", {"episode": episode.pk}, content_type="application/json", headers={"Authorization": f"Bearer {key}"}
    )
    assert api.status_code == 422 and api.json()["error"]["code"] == "replay_diverged"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("no_tool_calls", "its {n} agent steps make no tool calls: there is no action to replay and take over from"),
        ("no_seed", "the episode has no seed, so its world cannot be rebuilt for a replay"),
        ("passed", "the episode passed; pivotal mistakes are looked for in failed episodes"),
        ("unscored", "the episode has no pass/fail score"),
    ],
)
def test_the_viewer_says_why_an_episode_has_no_pivotal_search(login: Any, alice: Any, project_a: Any, change: str, reason: str) -> None:
    record = copy.deepcopy(anchor_record("do-nothing"))
    agent_steps = [s for s in record["steps"] if s["source"] == "agent"]
    if change == "no_tool_calls":
        for step in agent_steps:
            step["tool_calls"], step["results"], step["message"] = [], [], "thinking"
    elif change == "no_seed":
        record["header"]["seed"] = None
    elif change == "passed":
        record["header"]["score"] = {**record["header"]["score"], "passed": True}
    else:
        record["header"]["score"] = None
    episode = _native(project_a, alice, record)
    client = login(alice)
    page = client.get(f"/episodes/{episode.pk}/").content.decode()
    assert 'id="pivotal-form"' not in page
    assert _unavailable(page).startswith("No pivotal search here: " + reason.format(n=len(agent_steps)))
    response = client.post(f"/episodes/{episode.pk}/pivotal", {"anchor": ""})
    assert response.status_code == 400 and reason.format(n=len(agent_steps)) in response.content.decode()
