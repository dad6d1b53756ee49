"""Checked readers for settings that come from environment variables. A bad value stops start-up loudly."""

from __future__ import annotations

import ipaddress
import json
import os
import re
from typing import Any
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


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} must be at most {maximum}")
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


_ENDPOINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def env_endpoints(name: str, *, defaults: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The operator's named endpoints, a JSON object `{name: {"base_url": URL, "key_env": VAR}}` (key_env optional).
    A pool of servers behind one name gives `"base_urls": [URL, ...]` instead, and optionally `"max_in_flight": N`,
    the requests at once per server and worker process (training/policies/pool.py).
    `defaults` (endpoints implied by older variables) fill in names the object does not declare."""
    raw = os.environ.get(name, "").strip()
    try:
        declared = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(declared, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object of name -> {{base_url, key_env}}, got {type(declared).__name__}")
    endpoints: dict[str, dict[str, Any]] = {}
    for key, spec in {**defaults, **declared}.items():
        where = f"{name}[{key!r}]"
        if not _ENDPOINT_NAME.match(key):
            raise ImproperlyConfigured(f"{where}: a name is letters, digits, '_', '.' or '-' (at most 64)")
        if (
            not isinstance(spec, dict)
            or set(spec) - {"base_url", "base_urls", "key_env", "max_in_flight"}
            or ("base_url" in spec) == ("base_urls" in spec)
        ):
            raise ImproperlyConfigured(
                f"{where} must be an object with base_url (or base_urls, a list) and optionally key_env and max_in_flight, got {spec!r}"
            )
        urls = [spec["base_url"]] if "base_url" in spec else spec["base_urls"]
        if not isinstance(urls, list) or not urls:
            raise ImproperlyConfigured(f"{where}.base_urls={urls!r} must be a non-empty list of URLs")
        for i, base_url in enumerate(urls):
            _check_base_url(f"{where}.base_url" if "base_url" in spec else f"{where}.base_urls[{i}]", base_url)
        key_env, in_flight = spec.get("key_env", ""), spec.get("max_in_flight", 0)
        if not isinstance(key_env, str) or (key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env)):
            raise ImproperlyConfigured(f"{where}.key_env={key_env!r} must be the name of an environment variable")
        if isinstance(in_flight, bool) or not isinstance(in_flight, int) or in_flight < 0:
            raise ImproperlyConfigured(f"{where}.max_in_flight={in_flight!r} must be an integer, 0 (no cap) or more")
        base_urls = [u.rstrip("/") for u in urls]
        if len(set(base_urls)) != len(base_urls):
            raise ImproperlyConfigured(f"{where}.base_urls lists a URL twice: {urls!r}")
        endpoints[key] = {"base_url": base_urls[0], "key_env": key_env}
        if "base_urls" in spec or in_flight:
            endpoints[key].update(base_urls=base_urls, max_in_flight=in_flight)
    return endpoints


def _check_base_url(where: str, base_url: Any) -> None:
    parsed = urlparse(base_url if isinstance(base_url, str) else "")
    if not isinstance(base_url, str) or parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.username or parsed.password:
        raise ImproperlyConfigured(f"{where}={base_url!r} must be an http(s) URL with a host and no user:password")


def env_networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated CIDRs, e.g. `10.1.0.0/16, fd00::/8`."""
    networks = []
    for part in os.environ.get(name, "").split(","):
        if part.strip():
            try:
                networks.append(ipaddress.ip_network(part.strip()))
            except ValueError as exc:
                raise ImproperlyConfigured(f"{name}: {part.strip()!r} is not a CIDR network ({exc})") from None
    return tuple(networks)
