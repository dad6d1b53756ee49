"""Rollout throughput from 1 to 4 Celery workers, with a policy that waits on a simulated model.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/0 \
        .venv/bin/python benchmarks/fleet_throughput.py [--latency-ms 250 --rollouts 24 --max-workers 4]

Two cores cannot show CPU scaling, so the agent is an `openai` agent whose endpoint is a loopback server that sleeps
`--latency-ms` before each answer (as a busy inference server would) and then answers toolgym/echo correctly. For
each worker count it starts that many real `celery worker` processes (solo pool: one rollout at a time each) on a
queue of their own, enqueues `--rollouts` rollouts, and times them from the first enqueue to the last finish.
Uses a scratch database (practicum_fleet_bench) and Redis database 14, both emptied first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB, BENCH_REDIS_DB = "practicum_fleet_bench", 14
_LAUNCHER = (
    "import sys, django; django.setup(); from lab.celery import app; import lab.rollouts.services, training.policies.openai_compat; "
    "app.worker_main(['worker', '-Q', sys.argv[1], '--pool', 'solo', '--without-heartbeat', '--without-mingle', '--without-gossip', "
    "'--loglevel=INFO', '-n', sys.argv[2]])"  # INFO: the "<name> ready." line is how the benchmark knows a worker is up
)


def _urls() -> tuple[str, str]:
    database, broker = urlparse(os.environ.get("DATABASE_URL", "")), urlparse(os.environ.get("REDIS_URL", ""))
    if database.scheme not in ("postgres", "postgresql") or broker.scheme not in ("redis", "rediss"):
        sys.exit("benchmarks/fleet_throughput.py needs DATABASE_URL=postgres://... and REDIS_URL=redis://... (processes share both)")
    import psycopg
    import redis

    with psycopg.connect(urlunparse(database._replace(scheme="postgresql", path="/postgres")), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    broker_url = urlunparse(broker._replace(path=f"/{BENCH_REDIS_DB}"))
    redis.Redis.from_url(broker_url).flushdb()
    return urlunparse(database._replace(path=f"/{BENCH_DB}")), broker_url


def _model_server(latency_s: float) -> ThreadingHTTPServer:
    """Answers every chat completion after `latency_s` with the tool call that solves toolgym/echo."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            prompt = " ".join(str(m.get("content") or "") for m in body["messages"])
            word = (re.search(r"Say the word (\w+)", prompt) or re.search(r"(\w+)", "none")).group(1)  # type: ignore[union-attr]
            call = {"id": "c1", "type": "function", "function": {"name": "say", "arguments": json.dumps({"word": word})}}
            data = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _measure(workers: int, rollouts: int, env: dict[str, str], logs: Path) -> float:
    from lab.celery import app
    from lab.jobs import TERMINAL
    from lab.projects.models import Project
    from lab.rollouts.models import RolloutJob
    from lab.rollouts.services import rollout_launch
    from lab.rollouts.tasks import run_rollout

    queue = f"bench-{workers}"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, queue, f"bench{workers}-{i}@%h"],
            cwd=ROOT,
            env=env,
            stdout=(logs / f"{queue}-{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i in range(workers)
    ]
    try:
        time.sleep(1.0)
        deadline = time.monotonic() + 300
        while sum(b" ready." in (logs / f"{queue}-{i}.log").read_bytes() for i in range(workers)) < workers:
            if time.monotonic() > deadline:
                sys.exit(f"{workers} workers did not start within 300 s; see {logs}")
            time.sleep(0.2)
        project = Project.objects.get(slug="fleet-bench")
        jobs = [rollout_launch(project=project, agent="simulated", task="toolgym/echo", seed=s, enqueue=False) for s in range(rollouts)]
        started = time.monotonic()
        with app.connection_for_write(env["REDIS_URL"]) as connection:
            for job in jobs:
                run_rollout.apply_async(args=[job.pk], queue=queue, connection=connection)
        ids = [j.pk for j in jobs]
        while RolloutJob.objects.filter(pk__in=ids).exclude(status__in=TERMINAL).exists():
            if time.monotonic() - started > 300:
                sys.exit(f"rollouts with {workers} workers did not finish within 300 s")
            time.sleep(0.05)
        took = time.monotonic() - started
        failed = RolloutJob.objects.filter(pk__in=ids).exclude(status="finished").count()
        assert not failed, f"{failed} rollouts did not finish (see the episodes' causes)"
        return rollouts / took
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=int, default=250)
    parser.add_argument("--rollouts", type=int, default=24)
    parser.add_argument("--max-workers", type=int, default=4)
    args = parser.parse_args()
    database_url, broker_url = _urls()
    model = _model_server(args.latency_ms / 1000)
    endpoints = json.dumps({"simulated": {"base_url": f"http://127.0.0.1:{model.server_address[1]}/v1"}})
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": broker_url,
        "PRACTICUM_ENDPOINTS": endpoints,
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "PYTHONUNBUFFERED": "1",
    }
    os.environ.update(env)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    import django

    django.setup()
    from lab.projects.services import project_create
    from lab.trajectories.models import AgentConfig

    project = project_create(name="Fleet bench", slug="fleet-bench")
    AgentConfig.objects.create(
        project=project,
        name="simulated",
        kind="openai",
        model="sim",
        endpoint="simulated",
        sampling={"max_retries": 0},
        harness={"max_turns": 4},
    )
    logs = Path(os.environ.get("PRACTICUM_VAR_DIR", ROOT / "var")) / "fleet-bench"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"{args.rollouts} toolgym/echo rollouts, one model call each at {args.latency_ms} ms; solo workers\n")
    print("| workers | rollouts/s | vs 1 worker |\n| --- | --- | --- |")
    base = 0.0
    for workers in range(1, args.max_workers + 1):
        rate = _measure(workers, args.rollouts, env, logs)
        base = base or rate
        print(f"| {workers} | {rate:.2f} | {rate / base:.2f}x |", flush=True)
    model.shutdown()


if __name__ == "__main__":
    main()
