"""The SECRET_KEY at start-up: generated once into the var folder, reused, and weak configured keys refused.

Each case loads the real settings module in a fresh interpreter with its own environment, as a start would.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lab.secret_key import OLD_DEFAULT_KEY, secret_key_resolve, secret_key_weakness

ROOT = Path(__file__).resolve().parents[2]
STRONG = "k3Y-" + "aB9xQ7mZ2pL5wR8tV1nC4hJ6dF0gS3eU" * 2


def start(var_dir: Path, secret_key: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL")}
    env.update({"PRACTICUM_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "lab.settings"})
    if secret_key is not None:
        env["DJANGO_SECRET_KEY"] = secret_key
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_it_generates_a_private_key_on_first_start_and_reuses_it(tmp_path: Path) -> None:
    first = start(tmp_path, None)
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    stored = tmp_path / "secret_key"
    assert stored.read_text().strip() == key
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert len(key) >= 50 and key != OLD_DEFAULT_KEY
    second = start(tmp_path, None)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == key
    assert [p.name for p in tmp_path.iterdir() if "secret_key" in p.name] == ["secret_key"]  # no temporary left


def test_two_var_folders_get_different_keys(tmp_path: Path) -> None:
    one, two = start(tmp_path / "one", None), start(tmp_path / "two", None)
    assert one.returncode == 0 and two.returncode == 0
    assert one.stdout.strip() != two.stdout.strip()


def test_a_configured_strong_key_is_used_and_nothing_is_written(tmp_path: Path) -> None:
    done = start(tmp_path, STRONG)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == STRONG
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        (OLD_DEFAULT_KEY, "old public development default"),
        ("django-insecure-" + "x7#Qm2!pL9@vR4$tW8&nB3*cK6" * 2, "django-insecure-"),
        ("short-but-random-Zq8!", "has 21 characters; at least 50"),
        ("ab" * 30, "2 distinct characters; at least 5"),
    ],
)
def test_it_refuses_to_start_with_a_known_weak_key(tmp_path: Path, key: str, reason: str) -> None:
    done = start(tmp_path, key)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "DJANGO_SECRET_KEY is refused" in done.stderr and reason in done.stderr
    assert not (tmp_path / "secret_key").exists()


def test_it_refuses_a_tampered_key_file(tmp_path: Path) -> None:
    (tmp_path / "secret_key").write_text(OLD_DEFAULT_KEY)
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="holds an unusable secret key"):
        secret_key_resolve(configured="", var_dir=tmp_path)


def test_a_random_generated_key_passes_its_own_checks() -> None:
    assert secret_key_weakness(STRONG) is None
