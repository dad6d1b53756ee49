"""Evaluations and rollouts over the REST API, run by a real Celery worker; scoping and roles."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import anchor_agent_resolve, rollout_run
from lab.trajectories.models import AgentConfig, Episode

TASK = "storebench/payment-outage"


def _wait(client: Any, url: str, done: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(url).json()
        if done(body):
            return body
        time.sleep(0.1)
    raise AssertionError(f"{url} did not get there in {timeout} s: {body}")


def test_an_evaluation_launched_over_the_api_runs_on_the_worker(
    celery_worker: Any, alice_api: Any, bob: Any, api: Any, project_b: Any
) -> None:
    response = alice_api.post("/api/v1/evaluations/", {"agent": "naive-restock", "task_set": TASK, "seeds": [0, 1]}, format="json")
    assert response.status_code == 201, response.json()
    url = f"/api/v1/evaluations/{response.json()['id']}/"
    body = _wait(alice_api, url, lambda b: b["status"] == "finished")
    assert body["progress"] == 1.0 and body["agent"] == "naive-restock" and body["aggregate"]["episodes"] == 2
    assert AgentConfig.objects.get(name="naive-restock").kind == "scripted"  # the anchor was created on demand
    assert api(bob, project_b).get(url).status_code == 404
    regrade = alice_api.post(f"{url}regrade/")
    assert regrade.status_code == 200 and regrade.json()["matches"] is True
    rollouts = alice_api.get("/api/v1/rollouts/").json()
    assert sorted(r["seed"] for r in rollouts) == [0, 1] and {r["status"] for r in rollouts} == {"finished"}


def test_a_rollout_cancelled_over_the_api_ends_as_cancelled(celery_worker: Any, alice_api: Any, project_a: Any) -> None:
    AgentConfig.objects.create(project=project_a, name="slow-idler", kind="scripted", model="do-nothing", harness={"pace_ms": 100})
    response = alice_api.post("/api/v1/rollouts/", {"agent": "slow-idler", "task": TASK, "seed": 2}, format="json")
    assert response.status_code == 201, response.json()
    url = f"/api/v1/rollouts/{response.json()['id']}/"
    running = _wait(alice_api, url, lambda b: b["episode"] and Episode.objects.get(pk=b["episode"]).step_count >= 3)
    assert running["stream"] == f"/ws/episodes/{running['episode']}/"
    assert alice_api.post(f"{url}cancel/").status_code == 200
    body = _wait(alice_api, url, lambda b: b["status"] == "cancelled")
    episode = Episode.objects.get(pk=body["episode"])
    assert (episode.termination_reason, episode.status) == ("cancelled", "finished") and episode.step_count < 31


def test_launching_needs_a_writer_and_valid_parameters(
    db: Any, api: Any, role_users: dict[str, Any], project_a: Any, alice_api: Any
) -> None:
    viewer = api(role_users["viewer"], project_a)
    assert viewer.post("/api/v1/evaluations/", {"agent": "do-nothing", "task_set": TASK, "seeds": [0]}, format="json").status_code == 403
    assert viewer.post("/api/v1/rollouts/", {"agent": "do-nothing", "task": TASK, "seed": 0}, format="json").status_code == 403
    bad_set = alice_api.post("/api/v1/evaluations/", {"agent": "do-nothing", "task_set": "storebench/nope", "seeds": [0]}, format="json")
    assert bad_set.status_code == 400 and "storebench/nope" in bad_set.json()["error"]["message"]
    no_agent = alice_api.post("/api/v1/rollouts/", {"agent": "ghost", "task": TASK, "seed": 0}, format="json")
    assert no_agent.status_code == 404 and "ghost" in no_agent.json()["error"]["message"]
    no_seeds = alice_api.post("/api/v1/evaluations/", {"agent": "do-nothing", "task_set": TASK, "seeds": []}, format="json")
    assert no_seeds.status_code == 400


def test_seeds_past_the_maximum_or_outside_int64_are_refused(db: Any, alice_api: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_SEEDS = 3
    too_many = alice_api.post("/api/v1/evaluations/", {"agent": "do-nothing", "task_set": TASK, "seeds": [0, 1, 2, 3]}, format="json")
    assert too_many.status_code == 400 and too_many.json()["error"]["fields"]["seeds"] == ["4 seeds; at most 3 are allowed"]
    huge = alice_api.post("/api/v1/evaluations/", {"agent": "do-nothing", "task_set": TASK, "seeds": [2**70]}, format="json")
    # The strict JSON parser refuses a number past 64 bits before any serializer sees it, naming where it was.
    assert huge.status_code == 400, huge.json()
    assert "64-bit" in huge.json()["error"]["message"], huge.json()
    rollout = alice_api.post("/api/v1/rollouts/", {"agent": "do-nothing", "task": TASK, "seed": -(2**63) - 1}, format="json")
    assert rollout.status_code == 400 and "64-bit" in rollout.json()["error"]["message"], rollout.json()
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["owner", "researcher", "expert", "viewer"])
def test_regrading_an_evaluation_needs_the_role_that_runs_evaluations(api: Any, role_users: Any, project_a: Any, role: str) -> None:
    evaluation = evaluation_launch(
        project=project_a, agent=anchor_agent_resolve(project=project_a, name="naive-restock"), task_set=TASK, seeds=[0], enqueue=False
    )
    for job in RolloutJob.objects.filter(evaluation=evaluation):
        rollout_run(job_id=job.pk)
    answer = api(role_users[role], project_a).post(f"/api/v1/evaluations/{evaluation.pk}/regrade/")
    if role in ("owner", "researcher"):
        assert answer.status_code == 200 and answer.json()["matches"] is True
    else:
        assert answer.status_code == 403
        assert answer.json()["error"]["message"] == f"A {role} may not regrade evaluations; ask a project owner for a higher role."


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sampling": True}, "sampling"),
        ({"sampling": [1, 2]}, "sampling"),
        ({"sampling": {"temperature": "hot"}}, "sampling"),
        ({"sampling": {"max_tokens": True}}, "sampling"),
        ({"sampling": {"stop": {"nested": 1}}}, "sampling"),
        ({"harness": True}, "harness"),
        ({"harness": {"window_turns": "many"}}, "harness"),
        ({"harness": {"max_new_tokens": 0}}, "harness"),
        ({"harness": {"no_such_setting": 1}}, "harness"),
    ],
)
def test_agent_sampling_and_harness_are_validated_when_the_agent_is_created(alice_api: Any, body: dict[str, Any], field: str) -> None:
    answer = alice_api.post("/api/v1/agents/", {"name": "odd", "kind": "scripted", "model": "smart-triage", **body}, format="json")
    assert answer.status_code == 400, answer.content
    assert field in json.dumps(answer.json()["error"])
    created = alice_api.post("/api/v1/agents/", {"name": "fine", "kind": "scripted", "model": "smart-triage"}, format="json").json()["id"]
    patched = alice_api.patch(f"/api/v1/agents/{created}/", body, format="json")
    assert patched.status_code == 400, patched.content
