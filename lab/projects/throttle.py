"""Failed sign-ins and API-key attempts, counted per client address and username (or key prefix) in one-minute
windows, and per username alone (PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE, for guesses spread over many addresses).
The client address is REMOTE_ADDR, or behind PRACTICUM_TRUSTED_PROXIES proxies the one they forwarded (client_address).
Only failures count, so a busy client with good credentials is never slowed; once a pair has failed
PRACTICUM_AUTH_FAILURES_PER_MINUTE times in the window, every attempt of that pair is refused unchecked until the
window ends, right credentials included, or guessing would go on at full speed behind the refusals.

The counts live in the "auth_failures" cache: per process in the embedded mode, in Redis (shared by every web
process) when REDIS_URL is set.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import time
from typing import Any

from django.conf import settings
from django.core.cache import caches

WINDOW_S = 60
CACHE_ALIAS = "auth_failures"


def client_address(request: Any) -> str:
    """The client's address: REMOTE_ADDR, or behind PRACTICUM_TRUSTED_PROXIES reverse proxies the address the outermost
    of them saw. Each proxy appends the address it received from to X-Forwarded-For, so of the chain (the header's
    entries, then REMOTE_ADDR) the last N were written by trusted proxies and the one before them is the client;
    whatever the client wrote further left is ignored, and without trusted proxies the header is not read at all."""
    meta = getattr(request, "META", None) or {}
    remote = str(meta.get("REMOTE_ADDR") or "unknown")
    trusted = int(settings.PRACTICUM_TRUSTED_PROXIES)
    if trusted <= 0:
        return remote
    chain = [part.strip() for part in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",") if part.strip()] + [remote]
    candidate = chain[-(trusted + 1)] if len(chain) > trusted else chain[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:  # not an address: the proxy is misconfigured or the header was not its own; count the proxy
        return remote


def _window() -> tuple[int, float]:
    now = time.time()
    return int(now // WINDOW_S), now


def _key(scope: str, request: Any, ident: str, window: int) -> str:
    # Hashed: usernames and key prefixes may hold characters a cache key must not.
    digest = hashlib.sha256(f"{scope}\0{client_address(request)}\0{ident}".encode()).hexdigest()[:32]
    return f"authfail:{digest}:{window}"


def auth_failures_wait(*, scope: str, request: Any, ident: str) -> int:
    """Seconds until this address may try `ident` again; 0 when it may now."""
    window, now = _window()
    failures = caches[CACHE_ALIAS].get(_key(scope, request, ident, window), 0)
    if failures < settings.PRACTICUM_AUTH_FAILURES_PER_MINUTE:
        return 0
    return max(1, math.ceil((window + 1) * WINDOW_S - now))


def _account_key(scope: str, ident: str, window: int) -> str:
    digest = hashlib.sha256(f"{scope}\0*\0{ident}".encode()).hexdigest()[:32]
    return f"authfail-account:{digest}:{window}"


def auth_account_wait(*, scope: str, ident: str) -> int:
    """Seconds until `ident` (a username) may be tried again from any address: failures on one account from many
    addresses count together, up to PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE; 0 when it may now."""
    window, now = _window()
    if caches[CACHE_ALIAS].get(_account_key(scope, ident, window), 0) < settings.PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE:
        return 0
    return max(1, math.ceil((window + 1) * WINDOW_S - now))


def auth_failure_record(*, scope: str, request: Any, ident: str) -> None:
    window, _ = _window()
    cache = caches[CACHE_ALIAS]
    _count(cache, _account_key(scope, ident, window))
    _count(cache, _key(scope, request, ident, window))


def _count(cache: Any, key: str) -> None:
    cache.add(key, 0, timeout=WINDOW_S + 5)  # atomic in both backends: the first failure of a window creates the count
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr, at the very end of the window
        cache.add(key, 1, timeout=WINDOW_S + 5)


def rate_spend(*, scope: str, ident: str, amount: int, per_minute: int) -> int:
    """Spend `amount` from `ident`'s budget of `per_minute` in the current one-minute window (the same cache as
    the failure counts); 0 when spent, else the seconds until the window ends, with nothing spent. Concurrent
    spenders may overshoot by one batch: the check and the add are two cache calls."""
    window, now = _window()
    cache = caches[CACHE_ALIAS]
    digest = hashlib.sha256(f"{scope}\0{ident}".encode()).hexdigest()[:32]
    key = f"rate:{digest}:{window}"
    if cache.get(key, 0) + amount > per_minute:
        return max(1, math.ceil((window + 1) * WINDOW_S - now))
    cache.add(key, 0, timeout=WINDOW_S + 5)
    try:
        cache.incr(key, amount)
    except ValueError:  # expired between add and incr, at the very end of the window
        cache.add(key, amount, timeout=WINDOW_S + 5)
    return 0
