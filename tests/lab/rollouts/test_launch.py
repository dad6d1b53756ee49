"""The launch services are the one way rollouts and evaluations are made: every front end (API, console form,
`manage.py evaluate`) answers a bad task or agent with the service's own code and message, and writes nothing."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from lab.errors import DomainError
from lab.jobs import JobStatus
from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import rollout_launch
from lab.trajectories.models import AgentKind

pytestmark = pytest.mark.django_db
TASK = "storebench/payment-outage"


def _refusal(**launch: Any) -> DomainError:
    with pytest.raises(DomainError) as caught:
        (evaluation_launch if "task_set" in launch else rollout_launch)(**launch)
    return caught.value


def _console(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(("field", "value", "code"), [("task", "storebench/nope", "unknown_task"), ("agent", "ghost", "unknown_agent")])
def test_every_rollout_front_end_refuses_a_bad_task_or_agent_alike(
    alice: Any, alice_api: Any, project_a: Any, field: str, value: str, code: str
) -> None:
    form = {"agent": "do-nothing", "task": TASK, "seed": 0, field: value}
    expected = _refusal(project=project_a, agent=form["agent"], task=form["task"], seed=0)
    assert expected.code == code and value in expected.message

    api = alice_api.post("/api/v1/rollouts/", form, format="json").json()["error"]
    assert (api["code"], api["message"]) == (expected.code, expected.message)
    page = _console(alice).post("/rollouts/new", {**form, "project": "acme"})
    assert page.status_code == 400 and html.escape(expected.message) in page.content.decode()
    assert not RolloutJob.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "code"), [("task_set", "storebench/nope", "unknown_task_set"), ("agent", "ghost", "unknown_agent")]
)
def test_every_evaluation_front_end_refuses_a_bad_task_set_or_agent_alike(
    alice: Any, alice_api: Any, project_a: Any, field: str, value: str, code: str
) -> None:
    form = {"agent": "do-nothing", "task_set": TASK, field: value}
    expected = _refusal(project=project_a, agent=form["agent"], task_set=form["task_set"], seeds=[0])
    assert expected.code == code and value in expected.message

    api = alice_api.post("/api/v1/evaluations/", {**form, "seeds": [0]}, format="json").json()["error"]
    assert (api["code"], api["message"]) == (expected.code, expected.message)
    page = _console(alice).post("/evaluations/new", {**form, "seeds": "0", "project": "acme"})
    assert page.status_code == 400 and html.escape(expected.message) in page.content.decode()
    with pytest.raises(CommandError) as command:
        call_command("evaluate", agent=form["agent"], tasks=form["task_set"], seeds="0", project="acme", inline=True)
    assert str(command.value) == expected.message
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_rollout_launch_resolves_names_and_enqueues_after_commit(
    alice: Any, project_a: Any, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    enqueued: list[tuple[int, str]] = []
    monkeypatch.setattr("lab.rollouts.tasks.run_rollout.apply_async", lambda args, queue: enqueued.append((args[0], queue)))
    with django_capture_on_commit_callbacks(execute=True):
        job = rollout_launch(project=project_a, agent="do-nothing", task=TASK, seed=7, user=alice)
    assert (job.task.task_id, job.seed, job.status, job.queue, job.created_by) == (TASK, 7, JobStatus.QUEUED, "cpu", alice)
    assert (job.agent.name, job.agent.kind, job.agent.project) == ("do-nothing", AgentKind.SCRIPTED, project_a)
    assert enqueued == [(job.pk, "cpu")]
    with django_capture_on_commit_callbacks() as callbacks:
        rollout_launch(project=project_a, agent=job.agent, task=job.task, seed=8, enqueue=False)
    assert callbacks == [] and RolloutJob.objects.count() == 2


def test_evaluation_launch_makes_one_queued_rollout_per_task_and_seed(
    alice: Any, project_a: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        evaluation = evaluation_launch(project=project_a, agent="do-nothing", task_set=TASK, seeds=[3, 1], user=alice)
    assert (evaluation.status, evaluation.created_by, evaluation.agent.name) == (JobStatus.RUNNING, alice, "do-nothing")
    assert evaluation.started_at is not None and evaluation.ended_at is None
    jobs = RolloutJob.objects.filter(evaluation=evaluation)
    assert sorted(jobs.values_list("task__key", "seed", "status")) == [("payment-outage", 1, "queued"), ("payment-outage", 3, "queued")]
    assert len(callbacks) == 2  # one enqueue per rollout, none before the commit
