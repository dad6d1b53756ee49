"""Real `celery worker` processes for tests that kill workers: against the test database and a broker of the test's
choosing, each in a process group of its own so that SIGKILL takes its pool with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]

# The worker takes back messages left unacknowledged for `visibility_s` (a killed worker's), looking every second:
# production keeps the 1 h visibility timeout of the settings; the mechanism is the same. Before it starts, the worker
# imports what a rollout needs, so that a prefork pool's children (and a child forked to replace a killed one) start warm.
_LAUNCHER = (
    "import sys, django; django.setup(); from lab.celery import app; import lab.rollouts.services, training.policies.team; "
    "app.conf.broker_transport_options = {'visibility_timeout': float(sys.argv[2]), 'unacked_restore_interval': 1, 'unacked_restore_throttle': 1}; "
    "app.worker_main(['worker', '-Q', sys.argv[1], '--pool', sys.argv[4], '--concurrency', sys.argv[5], '--without-heartbeat', "
    "'--without-mingle', '--without-gossip', '--loglevel=INFO', '-n', sys.argv[3]])"
)


def worker_database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(
    queue: str,
    *,
    visibility_s: float,
    name: str,
    log: Path,
    redis_url: str = "",
    pool: str = "solo",
    concurrency: int = 1,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """A worker consuming only `queue` (it inherits the test's CPU priority)."""
    environment = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": redis_url or settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "lab.settings",
        "PRACTICUM_DUPLICATE_RECHECK_S": "1",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    command = [sys.executable, "-c", _LAUNCHER, queue, str(visibility_s), f"{name}@%h", pool, str(concurrency)]
    return subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def kill(*processes: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL each live worker's whole process group and reap it."""
    for process in processes:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def is_ready(log: Path) -> bool:
    """Whether the worker writing `log` has connected and said so (celery logs "<name> ready.")."""
    return log.exists() and b" ready." in log.read_bytes()


def pool_children(process: subprocess.Popen[bytes]) -> list[int]:
    """The pids of a prefork worker's pool processes (Linux /proc)."""
    path = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []
