"""Ingest throughput: trajectories uploaded through the REST API into PostgreSQL, against a raw COPY.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/ingest.py [--episodes 500 --steps 40]

Creates a scratch database (practicum_bench), migrates it, uploads N episodes × S steps through
POST /api/v1/episodes/ (the full stack in-process: middleware, key auth, parsing, validation, redaction,
hashing, storage), then COPYs the same step rows into a scratch table with psycopg (garbage collector off: the
floor) and prints both rates. Each side is timed `--repeat` times (5; each API repeat uploads content of its own)
and the medians are compared. Goal: the API at 25% or more of raw COPY speed. It also times a COPY of the same
rows, ready-made, into the steps table itself, whose primary key, unique index and episode check bound any
ingest path's ratio; `--profile FILE` writes a cProfile of the first repeat's uploads.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = "practicum_bench"


def _scratch_database_url() -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parsed = urlparse(base)
    if parsed.scheme not in ("postgres", "postgresql"):
        sys.exit("benchmarks/ingest.py needs DATABASE_URL=postgres://... (it measures PostgreSQL ingest)")
    import psycopg

    admin = urlunparse(parsed._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return urlunparse(parsed._replace(path=f"/{BENCH_DB}"))


def make_records(episodes: int, steps: int, run: int = 0) -> list[dict]:
    """`run` makes each repeat's content its own, so no repeat finds the previous one's episodes stored."""
    records = []
    for e in range(episodes):
        records.append(
            {
                "schema_version": "practicum.trajectory/1",
                "header": {
                    "env": "storebench",
                    "task": f"bench-{e % 10}",
                    "seed": e,
                    "source": "upload",
                    "metrics": {"run": run},
                    "policy": {"name": "bench-agent", "kind": "external"},
                    "termination_reason": "horizon_reached",
                    "score": {"composite": (e % 100) / 100, "passed": e % 3 == 0, "components": {"profit": 0.5}},
                },
                "steps": [
                    {
                        "index": i,
                        "source": "agent",
                        "message": f"Day {i // 4}: checking stock for SKU-{i % 37:03d} before reordering.",
                        "tool_calls": [{"id": f"call_{i}", "name": "get_inventory", "arguments": {"sku": f"SKU-{i % 37:03d}"}}],
                        "results": [
                            {
                                "call_id": f"call_{i}",
                                "content": {"sku": f"SKU-{i % 37:03d}", "available": i * 3 % 50, "reserved": i % 7, "incoming": 10},
                                "is_error": False,
                            }
                        ],
                        "reward": 0.0,
                        "sim_time_start": i * 15.0,
                        "sim_time_end": i * 15.0 + 5,
                        "state_hash": f"{e:08x}{i:08x}",
                        "events": [{"entity": f"sku:SKU-{i % 37:03d}", "field": "available", "op": "read"}],
                    }
                    for i in range(steps)
                ],
            }
        )
    return records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=50, help="records per request")
    parser.add_argument("--repeat", type=int, default=5, help="timings of each side; the medians are compared")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the first repeat's API uploads to FILE")
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = _scratch_database_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test import Client

    from lab.projects.services import api_key_issue, membership_set, project_create, user_get_or_create
    from lab.trajectories.bulk import copy_row, copy_steps
    from lab.trajectories.models import Step

    call_command("migrate", verbosity=0)
    user = user_get_or_create(username="bench")
    project = project_create(name="Bench", slug="bench")
    membership_set(project=project, user=user, role="owner")
    _, key = api_key_issue(project=project, user=user, name="bench")
    runs = [make_records(args.episodes, args.steps, run) for run in range(args.repeat)]
    total_steps = args.episodes * args.steps

    client = Client()
    # One small upload into another project first, through the same client: the timing then starts with the
    # middleware and the modules (the environment registry, the importers) that a serving process has loaded long before.
    warmup = project_create(name="Warm-up", slug="warmup")
    membership_set(project=warmup, user=user, role="owner")
    _, warmup_key = api_key_issue(project=warmup, user=user, name="warmup")
    response = client.post(
        "/api/v1/episodes/", data=json.dumps(make_records(1, 1)), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {warmup_key}"
    )
    assert response.status_code == 201, response.content[:500]
    # The generated records are the client's; in production they live in another process. Freezing them
    # keeps the collector from walking them again and again during either timing.
    gc.collect()
    gc.freeze()

    api_times = []
    for run, records in enumerate(runs):
        bodies = [json.dumps(records[i : i + args.batch]).encode() for i in range(0, len(records), args.batch)]
        profiler = cProfile.Profile() if args.profile and run == 0 else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        for body in bodies:
            response = client.post("/api/v1/episodes/", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 201, response.content[:500]
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        api_times.append(time.perf_counter() - started)
        del bodies
    assert Step.objects.filter(episode__project=project).count() == total_steps * args.repeat

    # The same rows, straight into a scratch table with COPY: the floor any ingest path could reach, measured
    # at its best, with the garbage collector off (the API path above pauses it itself, lab.ingest.collector).
    gc.disable()
    copy_times = []
    for run, records in enumerate(runs):
        rows = [
            (
                e,
                s["index"],
                s["source"],
                json.dumps(s.get("message")),
                json.dumps(s["tool_calls"]),
                json.dumps(s["results"]),
                s["reward"],
                s["sim_time_start"],
                s["sim_time_end"],
                json.dumps(s["events"]),
                s["state_hash"],
            )
            for e, record in enumerate(records)
            for s in record["steps"]
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE bench_copy_{run} (episode_id int, index int, source text, message jsonb, tool_calls jsonb, results jsonb,"
                " reward double precision, sim_time_start double precision, sim_time_end double precision, events jsonb, state_hash text)"
            )
            started = time.perf_counter()
            with cursor.cursor.copy(f"COPY bench_copy_{run} FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            copy_times.append(time.perf_counter() - started)

    # The same rows once more, pre-formatted, into the real steps table: its primary key, its unique (episode,
    # index) index and the trigger checking their episodes. No ingest path can beat this; it bounds the ratio above.
    episode_ids = list(Step.objects.filter(episode__project=project).order_by("episode_id").values_list("episode_id", flat=True).distinct())
    table_rows = [
        copy_row(episode_ids[e], {**s, "index": s["index"] + args.steps}) for e, record in enumerate(runs[0]) for s in record["steps"]
    ]
    started = time.perf_counter()
    with transaction.atomic():
        copy_steps(table_rows)
    table_s = time.perf_counter() - started

    api_s, copy_s = statistics.median(api_times), statistics.median(copy_times)
    print(f"episodes={args.episodes} steps/episode={args.steps} total steps={total_steps} requests={-(-args.episodes // args.batch)}")
    print(f"API ingest : {api_s:7.3f} s  {total_steps / api_s:10.0f} steps/s   (median of {_times(api_times)})")
    print(f"raw COPY   : {copy_s:7.3f} s  {total_steps / copy_s:10.0f} steps/s   (median of {_times(copy_times)})")
    print(f"ratio API / COPY = {copy_s / api_s:.2f}  (goal >= 0.25)")
    print(f"COPY of the same rows into the steps table itself: {table_s:.3f} s, so no ingest path exceeds {copy_s / table_s:.2f}")


def _times(seconds: list[float]) -> str:
    return ", ".join(f"{s:.3f}" for s in seconds)


if __name__ == "__main__":
    main()
