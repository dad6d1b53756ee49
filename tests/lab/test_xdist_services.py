"""Each pytest-xdist worker's Redis database (tests/xdist_services.py): its own, never the serial run's or the soak's."""

from __future__ import annotations

import pytest

from tests.xdist_services import SOAK_REDIS_DB, worker_redis_url


def test_each_worker_gets_a_database_of_its_own_past_the_serial_runs() -> None:
    assert worker_redis_url("redis://127.0.0.1:6379/0", "gw0") == "redis://127.0.0.1:6379/1"
    assert worker_redis_url("redis://:secret@cache:6380/5?ssl=1", "gw3") == "redis://:secret@cache:6380/4?ssl=1"
    assert worker_redis_url("rediss://cache", "gw1") == "rediss://cache/2"


def test_a_worker_that_would_share_the_soak_tests_database_is_refused() -> None:
    assert worker_redis_url("redis://h/0", f"gw{SOAK_REDIS_DB - 2}") == f"redis://h/{SOAK_REDIS_DB - 1}"
    with pytest.raises(RuntimeError, match="at most 12 workers"):
        worker_redis_url("redis://h/0", f"gw{SOAK_REDIS_DB - 1}")
