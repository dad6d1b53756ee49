"""Live-stream latency: 50 websocket clients on loopback watch a rollout; time from each step's commit to receipt.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \
        .venv/bin/python benchmarks/live.py [--clients 50 --agent smart-triage --task storebench/payment-outage --pace-ms 20]

Creates a scratch database (practicum_live_bench) and migrates it, starts a real daphne server (a separate
process, the Redis channel layer between it and this one), connects the clients from a third process, then
runs the rollout here through the same service the Celery task calls. Commit times are taken by an on_commit
hook registered before the step's own publish hook, so a latency covers the publish to Redis, daphne's consumer
and the websocket hop. The clients also check each event arrives exactly once and in order. Goal: p95 < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = "practicum_live_bench"


def _scratch_database_url() -> str:
    parsed = urlparse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"))
    if parsed.scheme not in ("postgres", "postgresql") or not os.environ.get("REDIS_URL"):
        sys.exit("benchmarks/live.py needs DATABASE_URL=postgres://... and REDIS_URL=redis://... (processes share both)")
    import psycopg

    with psycopg.connect(urlunparse(parsed._replace(scheme="postgresql", path="/postgres")), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return urlunparse(parsed._replace(path=f"/{BENCH_DB}"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    sys.exit(f"daphne did not listen on {port} within {timeout} s")


# --- the clients (a separate process) -------------------------------------------------------------------


def _clients(port: int, episode: int, after: int, cookie: str, count: int, ready: Any, out: Any) -> None:
    import websockets

    async def watch(n: int, barrier: asyncio.Event, connected: list[int]) -> list[tuple[int, int, float]]:
        url = f"ws://127.0.0.1:{port}/ws/episodes/{episode}/?after={after}"
        headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
        received: list[tuple[int, int, float]] = []  # (seq, step index or -1, receipt time)
        async with websockets.connect(url, additional_headers=headers, max_size=None) as ws:
            connected.append(n)
            if len(connected) == count:
                barrier.set()
            async for raw in ws:
                now = time.time()
                event = json.loads(raw)
                index = event["payload"].get("index", -1) if event["kind"] == "step" else -1
                received.append((event["seq"], index, now))
                if event["kind"] == "status" and event["payload"].get("termination_reason"):
                    return received
        return received

    async def main() -> list[list[tuple[int, int, float]]]:
        barrier, connected = asyncio.Event(), []
        tasks = [asyncio.create_task(watch(n, barrier, connected)) for n in range(count)]
        await asyncio.wait_for(barrier.wait(), 60)
        await asyncio.sleep(0.5)  # let daphne finish joining every consumer to the group
        ready.set()
        return await asyncio.wait_for(asyncio.gather(*tasks), 600)

    out.put(asyncio.run(main()))


# --- the producer (this process) ------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--agent", default="smart-triage", help="A StoreBench anchor.")
    parser.add_argument("--task", default="storebench/payment-outage")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pace-ms", type=int, default=20, help="Minimum time per step (a model's step takes longer).")
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = _scratch_database_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    import django

    django.setup()
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.db import transaction

    from lab.live.models import StreamCounter
    from lab.projects.services import membership_set, project_create
    from lab.rollouts import services
    from lab.rollouts.services import rollout_launch, rollout_run
    from lab.trajectories.models import AgentConfig
    from lab.trajectories.services import episode_start, task_resolve

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(username="spectator", password="bench-only-password")
    project = project_create(name="Live bench", slug="live-bench")
    membership_set(project=project, user=user, role="owner")
    session = SessionStore()
    session.update(
        {
            SESSION_KEY: str(user.pk),
            BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
            HASH_SESSION_KEY: user.get_session_auth_hash(),
        }
    )
    session.create()

    env_name, _, key = args.task.partition("/")
    agent = AgentConfig.objects.create(
        project=project, name=args.agent, kind="scripted", model=args.agent, harness={"pace_ms": args.pace_ms}
    )
    task = task_resolve(project=project, env=env_name, key=key)
    job = rollout_launch(project=project, agent=agent, task=task, seed=args.seed, enqueue=False)
    job.episode = episode_start(project=project, task=task, source="rollout", seed=args.seed, agent=agent)
    job.save(update_fields=["episode"])
    after = StreamCounter.objects.get(stream=f"episode:{job.episode.pk}").last_seq

    port = _free_port()
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "lab.asgi:application"],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_port(port)
        ctx = multiprocessing.get_context("spawn")
        ready, out = ctx.Event(), ctx.Queue()
        watcher = ctx.Process(target=_clients, args=(port, job.episode.pk, after, session.session_key, args.clients, ready, out))
        watcher.start()
        if not ready.wait(90):
            sys.exit("the websocket clients did not all connect")

        committed: dict[int, float] = {}
        append = services.episode_append_step

        def timed_append(*, episode: Any, step: dict[str, Any]) -> Any:
            with transaction.atomic():  # our hook runs first at commit, before the step's publish hook
                transaction.on_commit(lambda: committed.__setitem__(step["index"], time.time()))
                return append(episode=episode, step=step)

        services.episode_append_step = timed_append  # type: ignore[assignment]
        started = time.perf_counter()
        rollout_run(job_id=job.pk)
        elapsed = time.perf_counter() - started
        received = out.get(timeout=120)
        watcher.join(30)
    finally:
        daphne.terminate()
        daphne.wait(10)
    _report(args, job.episode.pk, committed, received, elapsed)


def _report(args: Any, episode: int, committed: dict[int, float], received: list[list[tuple[int, int, float]]], elapsed: float) -> None:
    latencies: list[float] = []
    in_order = 0
    for events in received:
        seqs = [seq for seq, _, _ in events]
        in_order += seqs == list(range(seqs[0], seqs[0] + len(seqs))) and len(set(seqs)) == len(seqs)
        latencies.extend((at - committed[index]) * 1000 for _, index, at in events if index >= 0)
    latencies.sort()
    steps = len(committed)

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))]

    print(f"episode {episode}: {args.agent} on {args.task} seed {args.seed}, {steps} steps in {elapsed:.1f} s (pace {args.pace_ms} ms)")
    print(
        f"{len(received)} clients, {len(latencies)} step events received of {steps * len(received)} expected; "
        f"{in_order}/{len(received)} clients got every event once and in order"
    )
    print(
        f"commit -> receipt latency: p50 {pct(50):.1f} ms  p95 {pct(95):.1f} ms  p99 {pct(99):.1f} ms  max {latencies[-1]:.1f} ms  "
        f"mean {statistics.fmean(latencies):.1f} ms"
    )
    print("goal p95 < 100 ms:", "met" if pct(95) < 100 else "NOT met")


if __name__ == "__main__":
    main()
