"""Outbound HTTP for LLM policies: one origin per client, and no private address unless the caller allowed it.

    connection = Connection(base_url="https://api.example.com/v1", api_key=key)                   # public hosts only
    connection = Connection(base_url="http://10.0.0.5:8001/v1", any_address=True)                 # a host the operator named
    client = guarded_client(connection, timeout=60.0)                                              # an httpx.Client

The address check runs where the socket is opened, on the addresses the name resolves to *then*, and the socket
connects to the address that was checked: a DNS answer that changes between validation and the call (DNS
rebinding) cannot point a call at 127.0.0.1 or 169.254.169.254. TLS still verifies and sends SNI for the host
name, because httpcore takes those from the request's origin, not from the address connected to. Every request
of the client must go to the connection's own origin, so a redirect (the openai client follows them) cannot
carry the call, or its key, anywhere else. Environment proxies are ignored: the guard must see the real peer.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Connection:
    """Where an OpenAI-compatible policy sends its requests, and with which key."""

    base_url: str
    """The server's base URL, e.g. https://api.openai.com/v1."""
    api_key: str = field(default="EMPTY", repr=False)
    """Sent as the bearer token; "EMPTY" for servers without keys. Never printed (repr=False)."""
    any_address: bool = False
    """True for an endpoint the operator declared: its host may be private or loopback."""
    allowed_networks: tuple[IPNetwork, ...] = ()
    """Private networks the operator allows for free URLs, e.g. 10.1.0.0/16."""
    name: str = ""
    """The endpoint's declared name, for messages; empty for a free URL."""
    servers: tuple[str, ...] = ()
    """Base URLs of a pool of servers behind this endpoint (training/policies/pool.py); empty: base_url alone."""
    max_in_flight: int = 0
    """Requests at once per server of the pool, per process; 0: no cap."""

    def __post_init__(self) -> None:
        for url in (self.base_url, *self.servers):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"endpoint: {url!r} is not an http(s) URL with a host")
        if self.max_in_flight < 0:
            raise ValueError(f"endpoint: max_in_flight={self.max_in_flight} must be 0 (no cap) or more")

    @property
    def pooled(self) -> bool:
        return bool(self.servers) or self.max_in_flight > 0


class AddressRefused(httpcore.ConnectError):
    """The host resolved to an address this connection may not reach."""


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to now. Module-level so tests can simulate a DNS answer that changes."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_problem(address: str, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """Why `address` may not be called (None when it may): loopback, private, link-local and the like are
    refused unless one of `allowed` contains them."""
    ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if any(ip in network for network in allowed):
        return None
    for label, flag in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("unspecified", ip.is_unspecified),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
    ):
        if flag:
            return f"{ip} is a {label} address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


def host_problem(host: str, port: int, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """Why `host` may not be called: it does not resolve, or one of its addresses is refused."""
    try:
        addresses = resolve(host, port)
    except (OSError, ValueError) as exc:  # ValueError: UnicodeError, or a NUL in the name
        return f"{host} does not resolve ({exc})"
    if not addresses:
        return f"{host} does not resolve"
    allowed = tuple(allowed)
    for address in addresses:
        problem = address_problem(address, allowed)
        if problem:
            return f"{host} resolves to a refused address: {problem}"
    return None


class GuardedBackend(httpcore.SyncBackend):
    """Resolves, refuses the host if any of its addresses is refused, then connects to a checked address."""

    def __init__(self, allowed: tuple[IPNetwork, ...]) -> None:
        self.allowed = allowed

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = resolve(host, port)
        except (OSError, ValueError) as exc:
            raise httpcore.ConnectError(f"{host} does not resolve ({exc})") from None
        for address in addresses:
            problem = address_problem(address, self.allowed)
            if problem:
                raise AddressRefused(f"refused to connect to {host}: {problem}")
        last: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout=timeout, local_address=local_address, socket_options=socket_options)
            except httpcore.ConnectError as exc:
                last = exc
        raise last or httpcore.ConnectError(f"{host} does not resolve")


class OriginPinnedTransport(httpx.BaseTransport):
    """Sends only to the connection's origin (scheme, host, port); anything else, a redirect included, is refused."""

    def __init__(self, connection: Connection) -> None:
        base = httpx.URL(connection.base_url)
        self.origin = (base.scheme, base.host, base.port or (443 if base.scheme == "https" else 80))
        self.inner = httpx.HTTPTransport()
        if not connection.any_address:
            assert isinstance(self.inner._pool, httpcore.ConnectionPool), "httpx built a proxy pool despite trust_env=False"
            # httpx has no public parameter for the network backend; this is the pool it would build, plus ours.
            self.inner._pool = httpcore.ConnectionPool(
                ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(connection.allowed_networks)
            )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        if origin != self.origin:
            raise httpx.ConnectError(
                f"refused a request to {url.scheme}://{url.host}: only the agent's endpoint may be called", request=request
            )
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def guarded_client(connection: Connection, *, timeout: float, attempts: int = 3) -> httpx.Client:
    """A client for the connection; for a pool of servers, one that balances and fails over (`attempts` tries a request)."""
    transport: httpx.BaseTransport
    if connection.pooled:
        from training.policies.pool import PooledTransport, shared_pool

        pool = shared_pool(replace(connection, servers=connection.servers or (connection.base_url,)), OriginPinnedTransport)
        transport = PooledTransport(pool, base_url=connection.base_url, attempts=attempts, wait_timeout=timeout)
    else:
        transport = OriginPinnedTransport(connection)
    return httpx.Client(transport=transport, timeout=timeout, trust_env=False, follow_redirects=False)
