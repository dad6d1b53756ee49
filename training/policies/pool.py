"""A pool of inference servers behind one endpoint: least in-flight first, a cap per server, failover with backoff.

    connection = Connection(base_url="http://gpu-1:8000/v1", servers=("http://gpu-1:8000/v1", "http://gpu-2:8000/v1"),
                            any_address=True, name="vllm-fleet", max_in_flight=16)
    client = guarded_client(connection, timeout=60.0)   # an httpx.Client whose transport is a PooledTransport

The OpenAI client talks to the first base URL; the transport sends each request to the server of the pool that has
the fewest requests in flight (ties in turn; a server that just failed rests a while, longer after each failure in
a row, while others can serve), never more than `max_in_flight` at once per server (a caller waits for
room, up to the request timeout). A connection error, a 429 or a 5xx is retried on another server when there is
one, after an exponential backoff (a 429's Retry-After, when given, up to the cap); when every try failed, the last
answer (or error) goes back to the caller, which the policy turns into an infrastructure error.

Each server keeps the netguard rules of its connection: one origin, checked addresses. The counts are per process
(one pool per endpoint and process, shared by every policy in it): a worker process never sends a server more than
the cap, and N worker processes at most N times the cap, which the operator sizes together with vLLM's own queue.
Responses are read whole before the request counts as finished, so streamed answers arrive buffered.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass
class Server:
    base_url: str
    transport: httpx.BaseTransport
    in_flight: int = 0
    sent: int = 0
    failures: int = 0
    streak: int = 0  # failures in a row; a success resets it
    resting_until: float = 0.0  # monotonic time before which the pool prefers the other servers
    order: int = field(default=0, repr=False)


class ServerPool:
    """Chooses servers (least in flight, then least recently chosen) and enforces the cap per server."""

    def __init__(self, servers: list[Server], *, max_in_flight: int = 0, rest_s: float = 1.0, rest_max_s: float = 30.0) -> None:
        assert servers, "a pool needs at least one server"
        self.servers = servers
        self.max_in_flight = max_in_flight
        self.rest_s, self.rest_max_s = rest_s, rest_max_s
        self._ticks = itertools.count(1)
        self._room = threading.Condition()

    def acquire(self, *, avoid: Server | None = None, timeout: float | None = None) -> Server:
        """A server with room, preferring any but `avoid` (the one that just failed); waits for room up to `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._room:
            while True:
                open_ = [s for s in self.servers if not self.max_in_flight or s.in_flight < self.max_in_flight]
                now = time.monotonic()
                # A server that just failed rests (longer after each failure in a row) while others can take the work.
                preferred = [s for s in open_ if s is not avoid and s.resting_until <= now] or [s for s in open_ if s is not avoid] or open_
                if preferred:
                    server = min(preferred, key=lambda s: (s.in_flight, s.order))
                    server.in_flight += 1
                    server.sent += 1
                    server.order = next(self._ticks)
                    return server
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise httpx.PoolTimeout(f"every server of the pool has {self.max_in_flight} requests in flight")
                self._room.wait(remaining)

    def release(self, server: Server, *, failed: bool = False) -> None:
        with self._room:
            server.in_flight -= 1
            server.failures += failed
            server.streak = server.streak + 1 if failed else 0
            if failed:
                server.resting_until = time.monotonic() + min(self.rest_s * 2 ** (server.streak - 1), self.rest_max_s)
            self._room.notify()


class PooledTransport(httpx.BaseTransport):
    """Rewrites each request from the logical base URL onto a server chosen by the pool, with failover."""

    def __init__(
        self,
        pool: ServerPool,
        *,
        base_url: str,
        attempts: int = 3,
        backoff_s: float = 0.25,
        backoff_max_s: float = 8.0,
        wait_timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        assert attempts >= 1, f"attempts={attempts} must be at least 1"
        self.pool, self.base, self.attempts = pool, httpx.URL(base_url.rstrip("/") + "/"), attempts
        self.backoff_s, self.backoff_max_s, self.wait_timeout, self.sleep = backoff_s, backoff_max_s, wait_timeout, sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()
        url = str(request.url)
        suffix = url[len(str(self.base)) :] if url.startswith(str(self.base)) else request.url.path.lstrip("/")
        failed: Server | None = None
        response: httpx.Response | None = None
        error: httpx.TransportError | None = None
        for attempt in range(self.attempts):
            if attempt:
                self.sleep(self._delay(attempt, None if error else response))
            server = self.pool.acquire(avoid=failed, timeout=self.wait_timeout)
            response, error = None, None
            try:
                outgoing = httpx.Request(
                    request.method,
                    server.base_url.rstrip("/") + "/" + suffix,
                    content=content,
                    headers=[(k, v) for k, v in request.headers.raw if k.lower() != b"host"],
                    extensions=request.extensions,
                )
                response = server.transport.handle_request(outgoing)
                response.read()  # the request is in flight until its answer is in
            except httpx.TransportError as exc:
                error = exc
            retry = error is not None or (response is not None and response.status_code in RETRY_STATUSES)
            self.pool.release(server, failed=retry)
            if not retry:
                break
            failed = server
        if error is not None:
            raise error
        assert response is not None
        return response

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Exponential with jitter; a 429's Retry-After (seconds) instead, when it names one, up to the cap."""
        after = response.headers.get("Retry-After") if response is not None else None
        if after is not None:
            try:
                return min(max(float(after), 0.0), self.backoff_max_s)
            except ValueError:
                pass  # an HTTP date: fall back to our own backoff
        return min(self.backoff_s * 2 ** (attempt - 1), self.backoff_max_s) * random.uniform(0.5, 1.0)

    def close(self) -> None:
        pass  # the servers' transports belong to the process's shared pool, which other clients still use


_pools: dict[tuple[Any, ...], ServerPool] = {}
_pools_lock = threading.Lock()


def shared_pool(connection: Any, make_transport: Callable[[Any], httpx.BaseTransport]) -> ServerPool:
    """The process's pool for this endpoint (its name, servers and cap), made on first use: every policy of the
    process shares its in-flight counts. `make_transport(single_server_connection)` builds each server's transport."""
    key = (connection.name, connection.servers, connection.max_in_flight, connection.any_address, connection.allowed_networks)
    with _pools_lock:
        if key not in _pools:
            servers = [Server(url, make_transport(replace(connection, base_url=url, servers=()))) for url in connection.servers]
            _pools[key] = ServerPool(servers, max_in_flight=connection.max_in_flight)
        return _pools[key]
