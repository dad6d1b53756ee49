"""A step's role is stored in its own column by every ingest path and read back exactly: absent stays absent."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from environments.trajectory import make_step
from lab.errors import DomainError
from lab.trajectories import imports
from lab.trajectories.models import Step
from lab.trajectories.services import episode_append_step, episode_start, episode_to_record, episodes_ingest, task_resolve

pytestmark = pytest.mark.django_db


def _team_record(record_factory: Any) -> dict[str, Any]:
    record = record_factory(steps=3)
    critic = make_step(index=3, message="check the supplier first", role="critic")
    harness = make_step(index=4, source="system", message="plan: 1. triage", role="harness")
    record["steps"] += [critic, harness]
    return record


def test_it_stores_each_steps_role_and_reads_it_back_exactly(project_a: Any, alice: Any, record_factory: Any) -> None:
    record = _team_record(record_factory)
    [outcome] = episodes_ingest(project=project_a, records=[copy.deepcopy(record)], user=alice)
    assert episode_to_record(outcome.episode)["steps"] == record["steps"]
    rows = dict(Step.objects.filter(episode=outcome.episode).values_list("index", "role"))
    assert rows == {0: "", 1: "", 2: "", 3: "critic", 4: "harness"}
    assert "role" not in episode_to_record(outcome.episode)["steps"][0]  # an old-style actor step stays without one


def test_the_native_upload_path_stores_the_role_too(project_a: Any, alice: Any, record_factory: Any) -> None:
    record = _team_record(record_factory)
    upload = imports.upload_ingest(project=project_a, user=alice, data=json.dumps([record]).encode(), filename="b.json", fmt="native")
    [outcome] = upload.outcomes
    assert episode_to_record(outcome.episode)["steps"] == record["steps"]
    assert list(Step.objects.filter(episode=outcome.episode, role="critic").values_list("index", flat=True)) == [3]


def test_a_record_without_roles_round_trips_unchanged(project_a: Any, alice: Any, record_factory: Any) -> None:
    record = record_factory(steps=2)
    [outcome] = episodes_ingest(project=project_a, records=[copy.deepcopy(record)], user=alice)
    assert episode_to_record(outcome.episode)["steps"] == record["steps"]
    assert set(Step.objects.filter(episode=outcome.episode).values_list("role", flat=True)) == {""}


def test_live_appends_keep_the_role(project_a: Any) -> None:
    task = task_resolve(project=project_a, env="toyenv", key="toy-task")
    episode = episode_start(project=project_a, task=task, source="rollout", seed=0)
    episode_append_step(episode=episode, step=make_step(index=0, message="advice", role="critic"))
    assert Step.objects.get(episode=episode, index=0).role == "critic"
    assert episode_to_record(episode)["steps"][0]["role"] == "critic"


@pytest.mark.parametrize("role", ["Critic", "x" * 40, "critic\n", ""])
def test_it_refuses_a_role_that_is_not_a_role_name_naming_the_step(project_a: Any, alice: Any, record_factory: Any, role: str) -> None:
    record = record_factory(steps=2)
    record["steps"][1]["role"] = role
    with pytest.raises(DomainError) as caught:
        episodes_ingest(project=project_a, records=[record], user=alice)
    assert caught.value.details["path"] == "steps[1].role"
    with pytest.raises(DomainError) as caught:  # the upload path too: the fast path leaves it to the general one
        imports.upload_ingest(project=project_a, user=alice, data=json.dumps([record]).encode(), filename="b.json", fmt="native")
    assert "role" in caught.value.message


def test_the_api_round_trips_roles_through_upload_steps_and_export(alice_api: Any, record_factory: Any) -> None:
    record = _team_record(record_factory)
    answer = alice_api.post("/api/v1/episodes/?project=acme", record, format="json")
    assert answer.status_code == 201, answer.json()
    episode = answer.json()["id"] if "id" in answer.json() else answer.json()["episodes"][0]["id"]
    steps = alice_api.get(f"/api/v1/episodes/{episode}/steps/").json()["steps"]
    assert [s.get("role") for s in steps] == [None, None, None, "critic", "harness"]
    assert alice_api.get(f"/api/v1/episodes/{episode}/export?format=native").json()["steps"] == record["steps"]
