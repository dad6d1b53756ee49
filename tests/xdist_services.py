"""Services of their own for each pytest-xdist worker (`make test` runs the suite on one worker per core).

pytest-django gives each worker its own test database (test_practicum_gw0, ...). Redis has no such step: the workers
would share one database, so one worker's embedded Celery worker could take another's jobs (and run them against the
wrong test database), and a purge or a flush in one would empty the other's queues. Each worker therefore gets a Redis
database number of its own: gw0 uses 1, gw1 uses 2, and so on (0 stays the serial run's, 13 the soak test's).

This module is loaded with `-p tests.xdist_services` (pyproject's addopts) so that it runs before pytest-django imports
the settings, which read REDIS_URL once.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

SOAK_REDIS_DB = 13  # tests/lab/rollouts/test_soak.py's database
REDIS_DATABASES = 16  # Redis's default `databases`


def worker_redis_url(url: str, worker: str) -> str:
    """`url` with the database number of xdist worker `worker` ("gw0", "gw1", ...)."""
    number = 1 + int(worker.removeprefix("gw"))
    if number >= SOAK_REDIS_DB:
        raise RuntimeError(f"pytest-xdist worker {worker}: at most {SOAK_REDIS_DB - 1} workers have a Redis database of their own")
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{number}", parts.query, ""))


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)

# Each worker's torch gets its share of the cores: two workers each running a two-thread OpenMP team on two cores
# stall every matmul on the other's busy core (training/decode.py measured ~6 ms a matmul).
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _worker and _workers > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))
