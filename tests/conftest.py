"""Shared fixtures: named personas, factories, an API client per persona, and an in-process Celery worker.

alice   — owner of project A ("acme")
bob     — owner of project B ("bravo")
mallory — member of A whose API key was revoked
role_users — one user per role in project A, for permission matrices
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Postgres/Redis-only tests are skipped with the reason when the services are not configured."""
    from django.conf import settings

    for item in items:
        if "postgres" in item.keywords and not settings.IS_POSTGRES:
            item.add_marker(pytest.mark.skip(reason="needs DATABASE_URL=postgres://... (make test uses SQLite without it)"))
        if "redis" in item.keywords and not settings.REDIS_URL:
            item.add_marker(pytest.mark.skip(reason="needs REDIS_URL=redis://... (make test uses in-memory layers without it)"))


@pytest.fixture(scope="session")
def model_store(tmp_path_factory: Any) -> Any:
    """The operator's model store for the whole session (models built into it are shared, like the tiny model).
    `org/tiny` is a name the launch-form tests give as a base model: a folder with a config.json, so a run may be
    created on it (the lab refuses a model the store does not hold) though nothing ever loads it."""
    store = tmp_path_factory.mktemp("models")
    (store / "org" / "tiny").mkdir(parents=True)
    (store / "org" / "tiny" / "config.json").write_text("{}")
    return store


@pytest.fixture(autouse=True)
def _isolated_var_dir(tmp_path: Any, settings: Any, model_store: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # PBKDF2 costs ~0.5 s a user here
    # Failed-attempt counts of one test must not throttle the next (and a Redis cache is never flushed here).
    settings.CACHES = {
        **settings.CACHES,
        "auth_failures": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": str(tmp_path)},
    }
    settings.PRACTICUM_UPLOAD_DIR = tmp_path / "uploads"
    settings.PRACTICUM_CHECKPOINT_DIR = tmp_path / "checkpoints"
    settings.PRACTICUM_MODEL_STORE = model_store


@pytest.fixture
def make_user(db: Any) -> Any:
    from django.contrib.auth import get_user_model

    def make(username: str, **extra: Any) -> Any:
        return get_user_model().objects.create_user(username=username, password=f"{username}-password", **extra)

    return make


@pytest.fixture
def project_a(db: Any) -> Any:
    from lab.projects.services import project_create

    return project_create(name="Acme", slug="acme")


@pytest.fixture
def project_b(db: Any) -> Any:
    from lab.projects.services import project_create

    return project_create(name="Bravo", slug="bravo")


@pytest.fixture
def alice(make_user: Any, project_a: Any) -> Any:
    from lab.projects.services import membership_set

    user = make_user("alice")
    membership_set(project=project_a, user=user, role="owner")
    return user


@pytest.fixture
def bob(make_user: Any, project_b: Any) -> Any:
    from lab.projects.services import membership_set

    user = make_user("bob")
    membership_set(project=project_b, user=user, role="owner")
    return user


@pytest.fixture
def mallory(make_user: Any, project_a: Any) -> tuple[Any, str]:
    """Mallory and her raw key — already revoked."""
    from lab.projects.services import api_key_issue, membership_set

    user = make_user("mallory")
    membership_set(project=project_a, user=user, role="researcher")
    key, raw = api_key_issue(project=project_a, user=user, name="old laptop")
    key.revoke()
    return user, raw


@pytest.fixture
def key_for(db: Any) -> Any:
    """key_for(user, project) -> raw API key."""
    from lab.projects.services import api_key_issue

    def issue(user: Any, project: Any) -> str:
        return api_key_issue(project=project, user=user, name=f"{user.username}-test")[1]

    return issue


@pytest.fixture
def api(key_for: Any) -> Any:
    """api(user, project) -> DRF APIClient authenticated with a fresh key of that user in that project."""
    from rest_framework.test import APIClient

    def client(user: Any, project: Any) -> APIClient:
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Bearer {key_for(user, project)}")
        return c

    return client


@pytest.fixture
def alice_api(api: Any, alice: Any, project_a: Any) -> Any:
    return api(alice, project_a)


@pytest.fixture
def role_users(make_user: Any, project_a: Any) -> dict[str, Any]:
    from lab.projects.services import membership_set

    users = {}
    for role in ("owner", "researcher", "expert", "viewer"):
        users[role] = make_user(f"{role}-user")
        membership_set(project=project_a, user=users[role], role=role)
    return users


def make_record(
    *, steps: int = 3, task: str = "toy-task", env: str = "toyenv", seed: int = 0, tag: str = "", **header: Any
) -> dict[str, Any]:
    """A valid native trajectory record with `steps` agent steps, each one tool call and its result."""
    from environments.trajectory import make_step, new_record

    return new_record(
        header={"env": env, "task": task, "seed": seed, "source": "upload", "policy": {"name": "test-agent"}, **header},
        steps=[
            make_step(
                index=i,
                message=f"thinking about step {i} {tag}".strip(),
                tool_calls=[{"id": f"c{i}", "name": "lookup", "arguments": {"n": i}}],
                results=[{"call_id": f"c{i}", "content": {"value": i * 2}, "is_error": False}],
                reward=0.1 * i,
            )
            for i in range(steps)
        ],
    )


@pytest.fixture
def record_factory() -> Any:
    return make_record


@pytest.fixture(scope="session")
def _embedded_worker(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
    """Set up after the test database and torn down before it, so no worker connection outlives it."""
    from django.db import connection

    from lab.celery import app, start_embedded_worker, stop_embedded_worker

    app.control.purge()  # with a Redis broker, messages left by an interrupted earlier run must not leak in
    yield start_embedded_worker()
    stop_embedded_worker()
    if connection.vendor == "postgresql":  # the worker threads' own connections, which only they could close
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture
def celery_worker(_embedded_worker: Any, transactional_db: Any) -> Any:
    """A real Celery worker running in this process (threads) against the configured broker.

    Tests using it see committed data only (transactional_db), as a worker in another process would.
    """
    return _embedded_worker
