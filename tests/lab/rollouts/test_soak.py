"""Soak: several real `celery worker` processes run two projects' evaluations while a seeded schedule SIGKILLs workers
and starts replacements. Afterwards every rollout finished exactly once, every chain replays and matches an
uninterrupted run, nothing is lost or duplicated, and both evaluations aggregated once.

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL). The workers use a Redis database number and a queue of their
own, so nothing here meets other tests' messages; the database is flushed before and after. The scripted agent is
paced (sleeps), so the work costs little CPU; booting the worker processes costs the most.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.conf import settings

from environments.registry import make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode
from lab.celery import app
from lab.jobs import JobStatus
from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.tasks import run_rollout
from lab.trajectories.models import AgentConfig, Episode
from lab.trajectories.services import episode_to_record
from tests.celery_workers import is_ready, kill, pool_children, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SOAK_REDIS_DB = 13
WORKERS = 3  # prefork, two pool processes each
KILLS = ("worker", "child", "child")  # shuffled by the seeded generator
VISIBILITY_S = 4.0
# Bounds, not expectations: on an idle two-core machine workers boot in about 5 s and the work phase takes about 30 s;
# the bounds leave room for a machine shared with training jobs.
BOOT_S, WORK_S = 90.0, 120.0


def _soak_redis_url() -> str:
    parts = urlsplit(settings.REDIS_URL)
    return urlunsplit((parts.scheme, parts.netloc, f"/{SOAK_REDIS_DB}", "", ""))


def _paced_expert(project: Any) -> AgentConfig:
    # 300 ms a step: an episode takes about a second, asleep, so kills land mid-episode without costing CPU.
    return AgentConfig.objects.create(project=project, name="paced-expert", kind="scripted", model="expert", harness={"pace_ms": 300})


def _uninterrupted_chain(task_id: str, seed: int) -> list[str]:
    env = make(task_id, seed)
    return [s["state_hash"] for s in run_episode(env, make_policy("expert", env, seed))["steps"]]


def test_killed_workers_lose_and_duplicate_nothing(transactional_db: Any, project_a: Any, project_b: Any, tmp_path: Path) -> None:
    url, queue, rng = _soak_redis_url(), f"soak-{uuid.uuid4().hex[:8]}", random.Random(24)
    broker = redis.Redis.from_url(url)
    broker.flushdb()
    evaluations = [
        evaluation_launch(project=project_a, agent=_paced_expert(project_a), task_set="toolgym/all", seeds=list(range(10)), enqueue=False),
        evaluation_launch(project=project_b, agent=_paced_expert(project_b), task_set="toolgym/all", seeds=list(range(5)), enqueue=False),
    ]
    jobs = list(RolloutJob.objects.filter(evaluation__in=evaluations))
    assert len(jobs) == 60
    workers: list[tuple[subprocess.Popen[bytes], Path]] = []
    kills: list[str] = []

    def spawn() -> None:
        log = tmp_path / f"soak{len(workers)}.log"
        workers.append(
            (start_worker(queue, visibility_s=VISIBILITY_S, name=log.stem, log=log, redis_url=url, pool="prefork", concurrency=2), log)
        )

    def ready() -> list[subprocess.Popen[bytes]]:
        return [w for w, log in workers if w.poll() is None and is_ready(log) and pool_children(w)]

    def unfinished() -> dict[str, int]:
        rows = RolloutJob.objects.filter(pk__in=[j.pk for j in jobs]).exclude(status=JobStatus.FINISHED).values_list("status", flat=True)
        return {status: list(rows).count(status) for status in set(rows)}

    try:
        for _ in range(WORKERS):
            spawn()
        wait_for(lambda: len(ready()) == WORKERS, BOOT_S, "the workers to start")
        started = time.monotonic()
        with app.connection_for_write(url) as connection:
            for job in jobs:
                run_rollout.apply_async(args=[job.pk], queue=queue, connection=connection)
        # The seeded kill schedule: after a random pause, SIGKILL a random ready worker whole (its unacknowledged messages
        # come back after the visibility timeout) or one of its pool processes (its master forks another, and hands the
        # message back at once).
        for what in rng.sample(KILLS, len(KILLS)):
            time.sleep(rng.uniform(1.0, 2.5))
            wait_for(lambda: ready(), WORK_S, "a ready worker to kill")
            victim = rng.choice(ready())
            if what == "worker":  # the replacement boots first, as a supervisor's would, so the fleet never runs short
                spawn()
                wait_for(lambda: len(ready()) > WORKERS, BOOT_S, "a replacement worker to start")
                kill(victim)
            else:
                os.kill(rng.choice(pool_children(victim)), signal.SIGKILL)
            kills.append(what)
        wait_for(
            lambda: (
                not unfinished()
                and not Evaluation.objects.filter(pk__in=[e.pk for e in evaluations]).exclude(status=JobStatus.FINISHED).exists()
            ),
            WORK_S - (time.monotonic() - started),
            "every rollout and evaluation to finish",
        )
        took = time.monotonic() - started
    except AssertionError as exc:
        raise AssertionError(f"{exc}; after kills {kills} the unfinished jobs are {unfinished()} (worker logs in {tmp_path})") from None
    finally:
        kill(*(w for w, _ in workers))
        broker.flushdb()
        broker.close()
    resumed = RolloutJob.objects.filter(evaluation__in=evaluations, attempts__gt=1).count()
    print(f"soak: {len(jobs)} rollouts, kills {kills}, {took:.1f} s after the workers were up, {resumed} resumed mid-episode")

    jobs = list(RolloutJob.objects.filter(evaluation__in=evaluations).select_related("episode", "task"))
    assert {j.status for j in jobs} == {JobStatus.FINISHED} and all(j.episode_id for j in jobs)
    # Proof that kills hit work in flight: a master saw its pool process die mid-task (and handed the message back).
    assert any(b"WorkerLostError" in log.read_bytes() for _, log in workers), "no kill interrupted a task; the soak proved nothing"
    episodes = Episode.objects.filter(project__in=[project_a, project_b], source="rollout")
    assert episodes.count() == len(jobs) == len({j.episode_id for j in jobs})  # one episode per rollout, none extra
    for job in jobs:
        record = episode_to_record(job.episode)
        steps = record["steps"]
        assert [s["index"] for s in steps] == list(range(len(steps))) == list(range(job.episode.step_count))  # none lost or doubled
        assert replay_record(record)["ok"], f"rollout {job.pk}'s chain does not replay"
        assert [s["state_hash"] for s in steps] == _uninterrupted_chain(job.task.task_id, int(job.seed))
    for evaluation in Evaluation.objects.filter(pk__in=[e.pk for e in evaluations]):
        assert evaluation.progress == 1.0 and evaluation.aggregate["episodes"] == evaluation.rollouts.count()
        assert evaluation.episodes.count() == evaluation.rollouts.count()
