"""The Celery app. Queues: `cpu` (rollouts, imports, replays, evaluations) and `gpu` (training, local-model rollouts).

Embedded mode (no REDIS_URL): an in-memory broker, and `start_embedded_worker()` runs a thread-pool worker
inside the current process, consuming both queues. With REDIS_URL: `celery -A lab worker -Q cpu` and
`celery -A lab worker -Q gpu` run as separate processes (docker-compose.yml).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")

app = Celery("practicum")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("cpu"), Queue("gpu"))
app.conf.task_routes = {"lab.runs.tasks.*": {"queue": "gpu"}}
app.autodiscover_tasks()

_embedded: dict[str, Any] = {}
_lock = threading.Lock()


def start_embedded_worker(*, concurrency: int = 2) -> Any:
    """Start (once per process) a thread-pool worker consuming both queues in this process."""
    with _lock:
        if "worker" in _embedded:
            return _embedded["worker"]
        worker = app.WorkController(
            pool_cls="threads",
            concurrency=concurrency,
            queues=["cpu", "gpu"],
            loglevel="WARNING",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            hostname=f"embedded@{os.getpid()}",
        )
        thread = threading.Thread(target=worker.start, name="celery-embedded", daemon=True)
        thread.start()
        _embedded.update(worker=worker, thread=thread)
        return worker


def stop_embedded_worker() -> None:
    with _lock:
        worker = _embedded.pop("worker", None)
        thread = _embedded.pop("thread", None)
    if worker is not None:
        worker.stop(in_sighandler=False)
    if thread is not None:
        thread.join(timeout=10)
