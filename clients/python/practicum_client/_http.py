"""One HTTP session with the server: bearer key, retries with backoff, errors as PracticumError.

What is retried, and why it is safe:
- 429 and 502/503/504: the server (or its proxy) did not do the work; always retried, after Retry-After if given.
- a connection that never opened: nothing was sent; always retried.
- 500, a read timeout, a dropped connection: the work may have been done. Retried only for reads and for
  writes that carry an Idempotency-Key (the server answers a repeat with its first answer); other writes raise.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from practicum_client import __version__
from practicum_client.errors import PracticumError, TransportError, error_from_response

_ALWAYS_RETRY = frozenset({429, 502, 503, 504})
_NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 5
    """Attempts after the first."""
    backoff_s: float = 0.5
    """The first wait; each retry doubles it (with jitter), up to `max_backoff_s`."""
    max_backoff_s: float = 30.0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.backoff_s < 0 or self.max_backoff_s < self.backoff_s:
            raise ValueError(
                f"retries={self.retries}, backoff_s={self.backoff_s}, max_backoff_s={self.max_backoff_s}: need 0 <= backoff <= max"
            )

    def wait_s(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after), self.max_backoff_s)
        return min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + random.random() / 2)


class Http:
    def __init__(
        self,
        url: str,
        key: str,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        headers = {"Authorization": f"Bearer {key}", "User-Agent": f"practicum-client/{__version__}"}
        self.client = httpx.Client(base_url=f"{self.url}/api/v1/", headers=headers, timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self.client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        content: bytes | None = None,
        files: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
    ) -> httpx.Response:
        """The response to a request that succeeded (2xx/3xx), or PracticumError once retries are spent.
        `idempotent`: the server treats a repeat of this write as a no-op, so it may be retried like a read."""
        safe = idempotent or method == "GET" or "Idempotency-Key" in (headers or {})
        attempt = 0
        while True:
            try:
                response = self.client.request(
                    method, path, params=_clean(params), json=json, content=content, files=files, headers=headers
                )
            except httpx.TransportError as exc:
                if attempt < self.retry.retries and (safe or isinstance(exc, _NOTHING_SENT)):
                    self.sleep(self.retry.wait_s(attempt))
                    attempt += 1
                    continue
                raise TransportError("transport", f"{method} {path}: {type(exc).__name__}: {exc}") from exc
            if response.status_code < 400:
                return response
            retriable = response.status_code in _ALWAYS_RETRY or (safe and response.status_code >= 500)
            if retriable and attempt < self.retry.retries:
                self.sleep(self.retry.wait_s(attempt, response.headers.get("Retry-After")))
                attempt += 1
                continue
            raise error_from_response(response)

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    @contextmanager
    def stream(self, path: str, *, params: Mapping[str, Any] | None = None) -> Iterator[httpx.Response]:
        """A GET whose body is read as it arrives. Failures before the answer starts are retried as `request`
        retries a read; once the body is flowing, a failure is raised (the caller has consumed part of it)."""
        attempt = 0
        while True:
            try:
                context = self.client.stream("GET", path, params=_clean(params))
                response = context.__enter__()
            except httpx.TransportError as exc:
                if attempt >= self.retry.retries:
                    raise TransportError("transport", f"GET {path}: {type(exc).__name__}: {exc}") from exc
                self.sleep(self.retry.wait_s(attempt))
                attempt += 1
                continue
            try:
                if response.status_code >= 400:
                    response.read()
                    if response.status_code in _ALWAYS_RETRY | {500} and attempt < self.retry.retries:
                        self.sleep(self.retry.wait_s(attempt, response.headers.get("Retry-After")))
                        attempt += 1
                        continue
                    raise error_from_response(response)
                try:
                    yield response
                except httpx.TransportError as exc:
                    raise TransportError("transport", f"GET {path}: the answer broke off: {type(exc).__name__}: {exc}") from exc
                return
            finally:
                context.__exit__(None, None, None)


def _clean(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters without the unset ones; booleans as the server reads them."""
    if not params:
        return None
    cleaned: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        cleaned[name] = ("true" if value else "false") if isinstance(value, bool) else value
    return cleaned


def expect_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PracticumError("unexpected_answer", f"{what}: expected a JSON object, got {type(value).__name__}")
    return value
