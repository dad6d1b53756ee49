"""PRACTICUM_HTTPS switches on secure cookies, HSTS and the https redirect; the proxy header is trusted only when
PRACTICUM_TLS_PROXY says a TLS proxy sets it. Each case loads the settings in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_PROXY_SSL_HEADER",
    "CSRF_COOKIE_HTTPONLY",
]


def settings_with(tmp_path: Path, **variables: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICUM_") and k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"PRACTICUM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "lab.settings", **variables})
    code = f"import json; from django.conf import settings; print(json.dumps({{n: getattr(settings, n) for n in {NAMES!r}}}))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    values: dict[str, Any] = json.loads(done.stdout)
    return values


def test_plain_http_by_default(tmp_path: Path) -> None:
    assert settings_with(tmp_path) == {
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_SSL_REDIRECT": False,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_PROXY_SSL_HEADER": None,
        "CSRF_COOKIE_HTTPONLY": True,
    }


def test_https_makes_cookies_secure_and_turns_on_hsts_and_the_redirect(tmp_path: Path) -> None:
    values = settings_with(tmp_path, PRACTICUM_HTTPS="1")
    assert values["SESSION_COOKIE_SECURE"] and values["CSRF_COOKIE_SECURE"] and values["SECURE_SSL_REDIRECT"]
    assert values["SECURE_HSTS_SECONDS"] == 31_536_000 and values["SECURE_PROXY_SSL_HEADER"] is None
    assert settings_with(tmp_path, PRACTICUM_HTTPS="1", PRACTICUM_HSTS_SECONDS="300")["SECURE_HSTS_SECONDS"] == 300


def test_the_forwarded_proto_header_is_trusted_only_behind_a_named_tls_proxy(tmp_path: Path) -> None:
    values = settings_with(tmp_path, PRACTICUM_HTTPS="1", PRACTICUM_TLS_PROXY="1")
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


def test_a_bad_switch_value_stops_start_up(tmp_path: Path) -> None:
    env = {**os.environ, "PRACTICUM_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "lab.settings", "PRACTICUM_HTTPS": "sometimes"}
    code = "from django.conf import settings; settings.SECRET_KEY"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "PRACTICUM_HTTPS='sometimes' is not a boolean" in done.stderr
