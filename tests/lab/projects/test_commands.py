"""manage.py commands that create projects, members and keys; bootstrap is idempotent."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from lab.projects.models import ApiKey, Membership, Project, hash_key

pytestmark = pytest.mark.django_db


def run(*args: Any, **options: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


def test_bootstrap_creates_the_admin_once_and_the_default_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "root-admin")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "s3cret-pass")
    first = run("bootstrap")
    second = run("bootstrap")
    assert "Created the admin user: root-admin" in first and "s3cret-pass" not in first
    assert "Created" not in second
    admin = get_user_model().objects.get(username="root-admin")
    assert admin.is_superuser and admin.check_password("s3cret-pass")
    assert Membership.objects.get(user=admin, project__slug="default").role == "owner"
    assert Project.objects.count() == 1


def test_bootstrap_prints_a_generated_password_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)
    line = run("bootstrap").splitlines()[0]
    password = line.split(" / ")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(password)


def test_projects_members_and_keys_from_the_command_line() -> None:
    run("create_project", "Vision Lab", "--slug", "vision")
    assert "carol is expert in vision" in run("add_member", "vision", "carol", "--role", "expert")
    raw = run("create_api_key", "vision", "carol", "--name", "laptop").strip()
    key = ApiKey.objects.get(name="laptop")
    assert key.key_hash == hash_key(raw) and key.is_active
    assert "revoked 1 key(s)" in run("create_api_key", "vision", "carol", "--revoke", raw[:10])
    key.refresh_from_db()
    assert not key.is_active


def test_a_key_for_a_non_member_is_refused() -> None:
    run("create_project", "Solo", "--slug", "solo")
    get_user_model().objects.create_user("dave")
    with pytest.raises(CommandError, match="not a member"):
        run("create_api_key", "solo", "dave")


def test_the_openapi_schema_and_swagger_ui_are_served(client: Any, alice: Any) -> None:
    client.force_login(alice)
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    assert "/api/v1/episodes/import/" in text and "/api/v1/datasets/export" in text
    docs = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in docs and "cdn" not in docs.lower() and "//unpkg" not in docs


def test_serve_prints_the_url_to_open_and_whom_to_log_in_as_but_never_the_password(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    from daphne.cli import CommandLineInterface

    served: list[list[str]] = []
    monkeypatch.setattr(CommandLineInterface, "run", lambda self, args: served.append(args))
    settings.CELERY_EMBEDDED = False
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "s3cret-pass")
    assert "Open http://127.0.0.1:8000/  (API docs" in run("serve")  # before bootstrap: nobody to log in as
    first = run("bootstrap")
    out = run("serve", "--host", "0.0.0.0", "--port", "8123")
    assert "Open http://127.0.0.1:8123/ and log in as admin" in out and "s3cret-pass" not in out
    assert served[-1] == ["-b", "0.0.0.0", "-p", "8123", "lab.asgi:application"]
    assert "Created the admin user: admin" in first and "Created" not in run("bootstrap")
