"""Checked readers for settings that come from environment variables. A bad value stops start-up loudly."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_url(name: str, *, schemes: tuple[str, ...]) -> str:
    """A URL variable that, when set, must use one of `schemes` and name a host."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        raise ImproperlyConfigured(f"{name}={raw!r} must start with one of {', '.join(s + '://' for s in schemes)}")
    if parsed.scheme not in ("sqlite",) and not parsed.hostname:
        raise ImproperlyConfigured(f"{name}={raw!r} names no host")
    return raw
