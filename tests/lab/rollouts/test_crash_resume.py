"""A real `celery worker` process killed with SIGKILL mid-episode; a second worker resumes the episode.

Needs a broker and a database shared between processes: PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).
The job goes to a queue of its own, so the in-process test worker never takes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from environments.registry import make
from environments.runner import make_policy, run_episode
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import rollout_enqueue, rollout_launch
from lab.trajectories.models import AgentConfig, Episode
from lab.trajectories.services import episode_to_record, task_resolve
from tests.celery_workers import kill, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def _worker(queue: str, visibility_s: float, name: str, log: Path) -> subprocess.Popen[bytes]:
    return start_worker(queue, visibility_s=visibility_s, name=name, log=log)


def _rollout_on_a_queue_of_its_own(project: Any, seed: int, prefix: str) -> RolloutJob:
    agent, _ = AgentConfig.objects.get_or_create(
        project=project, name="random-valid", defaults={"kind": "scripted", "model": "random-valid", "harness": {"pace_ms": 10}}
    )
    task = task_resolve(project=project, env="storebench", key="payment-outage")
    job = rollout_launch(project=project, agent=agent, task=task, seed=seed, enqueue=False)
    job.queue = f"{prefix}-{uuid.uuid4().hex[:8]}"
    job.save(update_fields=["queue"])
    return job


def _steps_written(job: RolloutJob) -> int:
    return Episode.objects.filter(rollout__pk=job.pk).values_list("step_count", flat=True).first() or 0


def _uninterrupted(seed: int) -> dict[str, Any]:
    env = make("storebench/payment-outage", seed)
    return run_episode(env, make_policy("random-valid", env, seed))


def test_a_killed_worker_leaves_a_resumable_episode_and_the_retry_continues_the_same_chain(
    transactional_db: Any, project_a: Any, tmp_path: Path
) -> None:
    job = _rollout_on_a_queue_of_its_own(project_a, 5, "crash")
    first = _worker(job.queue, 3600, "crash-a", tmp_path / "a.log")
    second = None
    try:
        rollout_enqueue(job)
        wait_for(lambda: _steps_written(job) >= 40, 60, "the first worker to write 40 steps")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        job.refresh_from_db()
        at_kill = job.episode.step_count
        assert (job.status, job.episode.status, job.attempts) == ("running", "running", 1)
        time.sleep(0.5)
        assert Episode.objects.get(pk=job.episode.pk).step_count == at_kill  # nobody writes any more

        second = _worker(job.queue, 2, "crash-b", tmp_path / "b.log")
        wait_for(lambda: RolloutJob.objects.get(pk=job.pk).status != "running", 120, "the second worker to finish the episode")
    finally:
        kill(first, second)
    job.refresh_from_db()
    episode = job.episode
    assert (job.status, job.attempts, episode.status, episode.termination_reason) == ("finished", 2, "finished", "horizon_reached")
    steps = episode_to_record(episode)["steps"]
    assert len(steps) > at_kill and [s["index"] for s in steps] == list(range(len(steps)))
    uninterrupted = _uninterrupted(5)
    assert [s["state_hash"] for s in steps] == [s["state_hash"] for s in uninterrupted["steps"]]
    assert episode.composite == pytest.approx(uninterrupted["header"]["score"]["composite"])


def test_a_message_handed_back_while_its_worker_still_runs_waits_instead_of_running_twice(
    transactional_db: Any, project_a: Any, tmp_path: Path
) -> None:
    job = _rollout_on_a_queue_of_its_own(project_a, 6, "dup")
    # Both workers take back messages unacknowledged for 2 s: the running episode's message comes back to the
    # second worker long before the first finishes, as a long run's does after an hour in production.
    first = _worker(job.queue, 2, "dup-a", tmp_path / "a.log")
    second = None
    try:
        rollout_enqueue(job)
        wait_for(lambda: _steps_written(job) >= 20, 60, "the first worker to write 20 steps")
        second = _worker(job.queue, 2, "dup-b", tmp_path / "b.log")
        wait_for(lambda: RolloutJob.objects.get(pk=job.pk).status != "running", 120, "the episode to finish")
    finally:
        kill(first, second)
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("finished", 1)  # the second worker never started the episode again
    steps = episode_to_record(job.episode)["steps"]
    assert [s["state_hash"] for s in steps] == [s["state_hash"] for s in _uninterrupted(6)["steps"]]
