"""lab.claims: a job delivered twice runs once, and a project over its share of the workers waits in the queue."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from celery.exceptions import Retry
from django.conf import settings
from django.core.management import CommandError, call_command

from lab import claims
from lab.exclusive import lock_key
from lab.jobs import JobStatus
from lab.projects.services import project_concurrency_set
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import rollout_launch
from lab.trajectories.models import Episode, ImportJob
from lab.trajectories.tasks import import_file

pytestmark = pytest.mark.django_db


class FakeTask:
    """Records what claimed_run asks of its Celery task instead of publishing anything."""

    def __init__(self) -> None:
        self.requeued: list[float] = []
        self.retried: list[float] = []

    def signature_from_request(self, *, countdown: float) -> Any:
        return SimpleNamespace(apply_async=lambda: self.requeued.append(countdown))

    def retry(self, *, countdown: float, max_retries: Any) -> Retry:
        self.retried.append(countdown)
        return Retry("retry", when=countdown)


def _other_connection() -> psycopg.Connection[Any]:
    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db.get("PASSWORD") or None,
        dbname=db["NAME"],
        autocommit=True,
    )


def _rollout(project: Any, seed: int = 0) -> RolloutJob:
    return rollout_launch(project=project, agent="expert", task="toolgym/lookup", seed=seed, enqueue=False)


def test_the_limit_is_the_setting_unless_the_project_has_its_own(project_a: Any, project_b: Any, settings: Any) -> None:
    settings.PRACTICUM_PROJECT_CONCURRENCY = 5
    project_concurrency_set(project=project_b, limit=2)
    assert (claims.project_concurrency(project_a.pk), claims.project_concurrency(project_b.pk)) == (5, 2)
    project_concurrency_set(project=project_b, limit=None)
    assert claims.project_concurrency(project_b.pk) == 5


@pytest.mark.parametrize("bad", [0, 1025, -1, True, "3"])
def test_a_limit_outside_1_to_1024_is_refused_with_the_value(project_a: Any, bad: Any) -> None:
    with pytest.raises(Exception, match=f"max_concurrent_jobs={bad!r}"):
        project_concurrency_set(project=project_a, limit=bad)


def test_the_operator_command_sets_shows_and_resets_the_limit(project_a: Any, capsys: Any) -> None:
    call_command("project_concurrency", "acme", "3")
    assert "at most 3 (its own)" in capsys.readouterr().out
    call_command("project_concurrency", "acme", "default")
    assert "(PRACTICUM_PROJECT_CONCURRENCY)" in capsys.readouterr().out
    with pytest.raises(CommandError, match="limit='many' is not an integer"):
        call_command("project_concurrency", "acme", "many")
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("project_concurrency", "nope")


def test_slots_are_counted_per_project_and_freed_after_the_block(project_a: Any, project_b: Any) -> None:
    with claims.project_slot(project_a.pk, 2) as first, claims.project_slot(project_a.pk, 2) as second:
        assert (first, second) == (0, 1)
        with claims.project_slot(project_a.pk, 2) as third, claims.project_slot(project_b.pk, 2) as other:
            assert third is None and other == 0  # project B is not held back by A's full share
        assert claims.project_slots_in_use(project_a.pk) == 2
    assert claims.project_slots_in_use(project_a.pk) == 0
    with claims.project_slot(project_a.pk, 2) as again:
        assert again == 0


@pytest.mark.postgres
def test_a_slot_held_by_another_worker_counts_until_its_connection_dies(project_a: Any) -> None:
    worker = _other_connection()
    assert worker.execute("SELECT pg_try_advisory_lock(%s, %s)", claims.slot_key(project_a.pk, 0)).fetchone() == (True,)
    assert claims.project_slots_in_use(project_a.pk) == 1
    with claims.project_slot(project_a.pk, 1) as slot:
        assert slot is None
    worker.close()  # a SIGKILLed worker's session ends the same way: no slot leaks
    for _ in range(200):
        if claims.project_slots_in_use(project_a.pk) == 0:
            break
    with claims.project_slot(project_a.pk, 1) as slot:
        assert slot == 0


def test_wait_countdown_grows_with_the_backlog_ahead_and_is_capped(settings: Any) -> None:
    settings.PRACTICUM_FAIR_RECHECK_S = 2
    assert 2.0 <= claims.wait_countdown(backlog=0, limit=4) <= 3.0
    assert 6.0 <= claims.wait_countdown(backlog=8, limit=4) <= 9.0  # two rounds of four jobs go first
    assert claims.wait_countdown(backlog=10_000, limit=1) <= 2 * claims.MAX_WAIT_FACTOR * 1.5


def test_an_ended_or_deleted_job_is_acknowledged_without_running(project_a: Any) -> None:
    job = _rollout(project_a)
    RolloutJob.objects.filter(pk=job.pk).update(status=JobStatus.FINISHED)
    ran: list[int] = []
    task = FakeTask()
    assert claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=job.pk, work=lambda: ran.append(1)) == "finished"
    assert claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=10**9, work=lambda: ran.append(1)) == "missing"
    assert ran == [] and task.requeued == task.retried == []


def test_a_job_over_its_projects_share_goes_back_to_the_queue_and_others_run(project_a: Any, project_b: Any, settings: Any) -> None:
    settings.PRACTICUM_FAIR_RECHECK_S = 1
    project_concurrency_set(project=project_a, limit=1)
    busy, waiting, other = _rollout(project_a, 0), _rollout(project_a, 1), _rollout(project_b, 0)
    RolloutJob.objects.filter(pk=busy.pk).update(status=JobStatus.RUNNING)  # as its work would have marked it
    task = FakeTask()
    ran: list[int] = []

    def first() -> str:  # while A's first job runs, A's second must wait and B's job must run
        with pytest.raises(Retry, match="waiting"):
            claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=waiting.pk, work=lambda: ran.append(waiting.pk))
        claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=other.pk, work=lambda: ran.append(other.pk))
        ran.append(busy.pk)
        return "done"

    assert claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=busy.pk, work=first) == "done"
    assert ran == [other.pk, busy.pk] and task.retried == []
    assert len(task.requeued) == 1 and 1.0 <= task.requeued[0] <= 1.5  # re-queued with a countdown, not looped on
    claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=waiting.pk, work=lambda: ran.append(waiting.pk))
    assert ran[-1] == waiting.pk  # its turn once the slot is free


@pytest.mark.postgres
def test_a_second_delivery_while_another_worker_runs_the_job_waits_its_turn(project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_DUPLICATE_RECHECK_S = 7
    job = _rollout(project_a)
    with _other_connection() as worker:
        worker.execute("SELECT pg_advisory_lock(%s, %s)", lock_key("rollout", job.pk))
        task = FakeTask()
        with pytest.raises(Retry):
            claims.claimed_run(task, model=RolloutJob, kind="rollout", pk=job.pk, work=lambda: pytest.fail("ran twice"))
    assert task.retried == [7] and task.requeued == [] and claims.project_slots_in_use(project_a.pk) == 0


def test_an_import_delivered_twice_stores_its_episodes_once(project_a: Any, alice: Any, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}))
    job = ImportJob.objects.create(project=project_a, created_by=alice, filename="chat.json", path=str(path))
    assert import_file(job.pk) == "finished"
    assert import_file(job.pk) == "finished"  # the redelivery finds the job done; its file is already gone
    job.refresh_from_db()
    assert job.report["created"] == 1 and len(job.episode_ids) == 1 and Episode.objects.filter(project=project_a).count() == 1
