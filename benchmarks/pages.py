"""Console page server time on PostgreSQL with 100k episodes: the episodes list (filters, sorts, keyset pages),
the viewer of a 2,000-step episode, the leaderboard and the dashboard.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/pages.py [--episodes 100000 --repeat 30]

Creates a scratch database (practicum_pages_bench), migrates it, generates episodes across 3 projects (the
user sees 2), 16 tasks, 12 agents, all sources and statuses, 90 days of creation times, plus one 2,000-step
episode; then requests each page through Django's test client (the whole stack in-process: middleware,
session auth, queries, templates) and prints p50/p95 server time per page. Goal: p95 under 300 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = "practicum_pages_bench"


def _scratch_database_url(*, reuse: bool) -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parsed = urlparse(base)
    if parsed.scheme not in ("postgres", "postgresql"):
        sys.exit("benchmarks/pages.py needs DATABASE_URL=postgres://... (it measures the pages on PostgreSQL)")
    import psycopg

    admin = urlunparse(parsed._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        if reuse and conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            return urlunparse(parsed._replace(path=f"/{BENCH_DB}"))
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB}")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return urlunparse(parsed._replace(path=f"/{BENCH_DB}"))


def generate(episodes: int) -> tuple[object, int]:
    """Returns (the benchmark user, the id of the 2,000-step episode)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from environments.trajectory import make_step
    from lab.projects.services import membership_set, project_create
    from lab.trajectories.bulk import insert_steps, step_row
    from lab.trajectories.models import AgentConfig, Episode, Task

    rng = random.Random(0)
    user = get_user_model().objects.create_user(username="bench", password="bench-password")
    projects = [project_create(name=f"Project {i}", slug=f"p{i}") for i in range(3)]
    for project in projects[:2]:
        membership_set(project=project, user=user, role="researcher")
    tasks = {
        p.pk: [
            Task.objects.create(
                project=p, env="storebench", env_version="1.0.0", key=f"scenario-{k}", split=("train", "dev", "test")[k % 3]
            )
            for k in range(16)
        ]
        for p in projects
    }
    kinds = ["scripted"] * 4 + ["hf"] * 4 + ["openai"] * 2 + ["human"] * 2
    agents = {p.pk: [AgentConfig.objects.create(project=p, name=f"agent-{a}", kind=kinds[a]) for a in range(12)] for p in projects}
    now = timezone.now()
    batch: list[Episode] = []
    started = time.perf_counter()
    for i in range(episodes):
        project = projects[i % 3]
        agent = rng.choice(agents[project.pk])
        status = rng.choices(["finished", "running", "failed", "abandoned"], weights=[90, 4, 4, 2])[0]
        composite = round(rng.random(), 4) if status == "finished" else None
        source = "human" if agent.kind == "human" else rng.choice(["rollout", "rollout", "upload"])
        batch.append(
            Episode(
                project=project,
                task=rng.choice(tasks[project.pk]),
                agent=agent,
                seed=rng.randrange(50),
                source=source,
                status=status,
                termination_reason="horizon_reached" if status == "finished" else "",
                composite=composite,
                passed=None if composite is None else composite > 0.5,
                score={"composite": composite, "components": {"profit": composite}} if composite is not None else None,
                step_count=rng.randrange(50, 900),
                meta={"header": {"env": "storebench", "task": "x", "source": source}},
            )
        )
        if len(batch) == 5000:
            Episode.objects.bulk_create(batch)
            batch.clear()
    Episode.objects.bulk_create(batch)
    # Spread creation times over 90 days (auto_now_add stamped them all "now").
    with connection.cursor() as cursor:
        cursor.execute("UPDATE trajectories_episode SET created_at = %s - (id * interval '77 seconds')", [now])
    long = Episode.objects.create(
        project=projects[0],
        task=tasks[projects[0].pk][0],
        agent=agents[projects[0].pk][0],
        seed=1,
        source="rollout",
        status="finished",
        composite=0.5,
        passed=False,
        step_count=2000,
        meta={"header": {}},
    )
    steps = [
        make_step(
            index=s,
            message=f"Day {s // 40}: step {s}",
            tool_calls=[{"id": f"c{s}", "name": "get_inventory", "arguments": {"category": "shirts"}}],
            results=[
                {"call_id": f"c{s}", "content": {"inventory": [{"sku": f"P0{s % 9}-BLA-M", "on_hand": s % 50}] * 5}, "is_error": False}
            ],
            events=[{"entity": f"sku:P0{s % 9}-BLA-M", "field": "on_hand", "before": 1, "after": 2, "op": "write"}],
            sim_time_start=s * 12.0,
            sim_time_end=s * 12.0 + 5,
            state_hash=f"{s:032x}",
        )
        for s in range(2000)
    ]
    insert_steps([step_row(long.pk, step) for step in steps])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"generated {episodes:,} episodes + one of 2,000 steps in {time.perf_counter() - started:.1f} s")
    return user, long.pk


def measure(client: object, url: str, repeat: int) -> list[float]:
    times = []
    for i in range(repeat + 3):
        started = time.perf_counter()
        response = client.get(url)  # type: ignore[attr-defined]
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        if i >= 3:  # the first requests warm caches and connections
            times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--reuse", action="store_true", help="measure the data a previous run generated instead of generating again")
    args = parser.parse_args()

    os.environ["DATABASE_URL"] = _scratch_database_url(reuse=args.reuse)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from lab.trajectories.models import Episode

    call_command("migrate", verbosity=0)
    existing = get_user_model().objects.filter(username="bench").first()
    if existing is not None:
        user, long_id = existing, Episode.objects.get(step_count=2000, seed=1, meta={"header": {}}).pk
    else:
        user, long_id = generate(args.episodes)
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]

    from lab.console.selectors import episode_page
    from lab.projects.selectors import project_list_for
    from lab.trajectories.selectors import episode_list

    visible = episode_list(projects=project_list_for(user=user), filters={})
    first = episode_page(visible)
    cursor = first.next_cursor
    for _ in range(20):  # 21 pages deep by keyset
        cursor = episode_page(visible, cursor=cursor or "").next_cursor
    pages = {
        "episodes (newest)": "/episodes/",
        "episodes page 2": f"/episodes/?cursor={quote(first.next_cursor or '')}",
        "episodes page 22": f"/episodes/?cursor={quote(cursor or '')}",
        "episodes by score": "/episodes/?sort=-composite",
        "episodes task+agent": "/episodes/?task=storebench/scenario-3&agent=agent-5",
        "episodes human passed": "/episodes/?source=human&passed=true",
        "episodes running": "/episodes/?status=running",
        "episodes seed+score": "/episodes/?seed=7&score_min=0.9&sort=-composite",
        "viewer 2,000 steps": f"/episodes/{long_id}/",
        "viewer steps page": f"/episodes/{long_id}/steps?start=1000&dir=next",
        "leaderboard": "/leaderboard/",
        "leaderboard test split": "/leaderboard/?split=test&env_version=1.0.0",
        "dashboard": "/",
    }
    print(f"{'page':<24} {'p50 ms':>8} {'p95 ms':>8}")
    worst = 0.0
    for name, url in pages.items():
        times = sorted(measure(client, url, args.repeat))
        p50, p95 = statistics.median(times), times[int(0.95 * (len(times) - 1))]
        worst = max(worst, p95)
        print(f"{name:<24} {p50:>8.1f} {p95:>8.1f}")
    print(f"worst p95: {worst:.1f} ms (goal < 300 ms)")


if __name__ == "__main__":
    main()
