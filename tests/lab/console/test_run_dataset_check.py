"""Run creation checks its training data (issue 44): partial demonstrations are left out unless the run asks for them,
an empty training set is refused with each skipped episode and why, and the form previews both; API and console alike."""

from __future__ import annotations

from typing import Any

import pytest

from lab.runs.models import TrainingRun
from lab.runs.services import run_create

pytestmark = pytest.mark.django_db
PARTIAL = "partial demonstration (ended by max_steps), not included"


@pytest.fixture
def store_episodes(project_a: Any, role_users: dict[str, Any]) -> dict[str, Any]:
    """smart-triage to the horizon, and do-nothing cut at the step cap (10 steps): a whole and a partial demonstration."""
    from environments import registry
    from environments.runner import make_policy, run_episode
    from lab.trajectories.models import Provenance
    from lab.trajectories.services import episodes_ingest
    from tests.lab.console.conftest import anchor_record

    env = registry.make("storebench/cash-crunch", seed=0)
    cut = run_episode(env, make_policy("do-nothing", env, 0), max_steps=10)
    outcomes = episodes_ingest(
        project=project_a, records=[anchor_record("smart-triage"), cut], user=role_users["owner"], provenance=Provenance.RECORDED
    )
    return {"smart": outcomes[0].episode, "idle": outcomes[1].episode}


def test_a_run_leaves_partial_demonstrations_out_unless_it_asks_for_them(
    project_a: Any, alice: Any, store_episodes: dict[str, Any]
) -> None:
    smart, idle = store_episodes["smart"], store_episodes["idle"]
    assert (smart.termination_reason, idle.termination_reason) == ("horizon_reached", "max_steps")
    run = run_create(project=project_a, recipe="sft", base_model="org/tiny", config={}, user=alice, enqueue=False)
    assert run.episode_ids == [smart.pk]
    assert run.dataset_spec == {"include_partial": False, "skipped": {PARTIAL: [idle.pk]}}
    both = run_create(project=project_a, recipe="sft", base_model="org/tiny", config={}, user=alice, enqueue=False, include_partial=True)
    assert both.episode_ids == [smart.pk, idle.pk] and both.dataset_spec == {"include_partial": True, "skipped": {}}


def test_no_trainable_episode_is_refused_with_each_skipped_episode_and_why(
    client: Any, key_for: Any, project_a: Any, alice: Any, store_episodes: dict[str, Any]
) -> None:
    smart, idle = store_episodes["smart"], store_episodes["idle"]
    body = {"recipe": "sft", "base_model": "org/tiny", "config": {"min_score": 1.1}}
    api = client.post(
        "/api/v1/runs/", body, content_type="application/json", headers={"Authorization": f"Bearer {key_for(alice, project_a)}"}
    )
    error = api.json()["error"]
    assert api.status_code == 400 and error["code"] == "no_training_data"
    assert error["message"] == (
        "none of the 2 episodes matching the dataset filters {} has anything to train on: "
        f"1 {PARTIAL}: episode {idle.pk}; 1 score below min_score=1.1: episode {smart.pk}"
    )
    assert error["skipped"] == {PARTIAL: [idle.pk], "score below min_score=1.1": [smart.pk]}
    client.force_login(alice)
    page = client.post("/runs/new", {"project": "acme", "recipe": "sft", "base_model": "org/tiny", "config": "min_score = 1.1"})
    assert page.status_code == 400
    assert f"1 score below min_score=1.1: episode {smart.pk}" in page.content.decode().split('id="dataset-error">')[1].split("</p>")[0]
    ticked = client.post(
        "/runs/new",
        {"project": "acme", "recipe": "sft", "base_model": "org/tiny", "config": "passed_only = false", "include_partial": "on"},
    )
    run = TrainingRun.objects.get()
    assert ticked.status_code == 302 and run.dataset_spec["include_partial"] is True and run.episode_ids == [smart.pk, idle.pk]


def test_the_api_refuses_a_non_boolean_include_partial(client: Any, key_for: Any, project_a: Any, alice: Any) -> None:
    body = {"recipe": "sft", "base_model": "org/tiny", "include_partial": "yes"}
    api = client.post(
        "/api/v1/runs/", body, content_type="application/json", headers={"Authorization": f"Bearer {key_for(alice, project_a)}"}
    )
    assert api.status_code == 400 and api.json()["error"]["message"] == "include_partial='yes': must be a bool"


def test_the_form_previews_the_dataset_with_partial_demonstrations_marked(login: Any, alice: Any, store_episodes: dict[str, Any]) -> None:
    smart, idle = store_episodes["smart"], store_episodes["idle"]
    client = login(alice)
    form = client.get("/runs/").content.decode()
    assert 'name="include_partial"' in form and "checked" not in form.split('id="include-partial"')[1].split(">")[0]
    query = {"project": "acme", "recipe": "sft", "base_model": "org/tiny"}
    fragment = client.get("/runs/dataset", query, headers={"HX-Request": "true"}).content.decode()
    assert fragment.startswith('<div id="dataset-preview">')
    assert "2 episodes match; 1 would be trained on; 1 partial demonstration (left out: tick" in fragment
    row = fragment.split(f'<a href="/episodes/{idle.pk}/">')[1].split("</tr>")[0]
    assert '<span class="tag bad">partial: max_steps</span>' in row
    assert "partial:" not in fragment.split(f'<a href="/episodes/{smart.pk}/">')[1].split("</tr>")[0]
    ticked = client.get("/runs/dataset", {**query, "include_partial": "on"}).content.decode()  # without JavaScript: the whole page
    assert "<html" in ticked and "2 episodes match; 2 would be trained on; 1 partial demonstration (included)" in ticked
