"""Transports for practicum-client tests that lose answers, die mid-upload or answer slowly, the way networks
and processes do; every request still goes to the real server on loopback."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx


class Killed(BaseException):
    """The process dying mid-request: no retry loop catches it."""


@dataclass
class Network(httpx.BaseTransport):
    """A loopback transport that counts requests and can misbehave on chosen ones.

    `lose` / `kill`: numbers (1-based) of POSTs whose request reaches the server and is handled, but whose answer the
    client never gets (lost: a read timeout it may retry; killed: the process dies). `refuse`: POST numbers answered
    429 without reaching the server. `delay_s`: every request waits this long first (a slow server)."""

    lose: set[int] = field(default_factory=set)
    kill: set[int] = field(default_factory=set)
    refuse: set[int] = field(default_factory=set)
    delay_s: float = 0.0
    posts: list[httpx.Request] = field(default_factory=list)
    inner: httpx.HTTPTransport = field(default_factory=httpx.HTTPTransport)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.delay_s:
            time.sleep(self.delay_s)
        if request.method != "POST":
            return self.inner.handle_request(request)
        self.posts.append(request)
        number = len(self.posts)
        if number in self.refuse:
            return httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"code": "throttled", "message": "slow down"}})
        response = self.inner.handle_request(request)
        response.read()
        if number in self.kill:
            raise Killed(f"killed after POST {number} was handled")
        if number in self.lose:
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return response

    def close(self) -> None:
        self.inner.close()
