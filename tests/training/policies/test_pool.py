"""A pool of inference servers against real HTTP servers on loopback: balance, cap, failover, backoff."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import pytest

from environments.registry import make
from environments.runner import run_episode
from tests.loopback_http import loopback_server
from training.policies import Connection, policy_from_config
from training.policies.netguard import guarded_client
from training.policies.pool import PooledTransport, Server, ServerPool

Reply = tuple[int, dict[str, str], bytes]
OK: Reply = (200, {"Content-Type": "application/json"}, b'{"ok": true}')


class Backend:
    """One loopback server: answers from `script` (then `default`), counts requests and the most at once."""

    def __init__(self, default: Reply = OK, *, delay_s: float = 0.0) -> None:
        self.script: list[Reply] = []
        self.default, self.delay_s = default, delay_s
        self.hits = 0
        self.now = self.peak = 0
        self.lock = threading.Lock()

    def answer(self, request: Any) -> Reply:
        with self.lock:
            self.hits += 1
            self.now += 1
            self.peak = max(self.peak, self.now)
            reply = self.script.pop(0) if self.script else self.default
        time.sleep(self.delay_s)
        with self.lock:
            self.now -= 1
        return reply


@contextmanager
def backends(*items: Backend) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [f"http://127.0.0.1:{stack.enter_context(loopback_server(b.answer))}/v1" for b in items]


def _pooled(urls: list[str], *, cap: int = 0, attempts: int = 3, sleep: Callable[[float], None] = lambda s: None) -> httpx.Client:
    connection = Connection(base_url=urls[0], servers=tuple(urls), any_address=True, name=f"pool-{id(urls)}", max_in_flight=cap)
    client = guarded_client(connection, timeout=5.0, attempts=attempts)
    assert isinstance(client._transport, PooledTransport)
    client._transport.sleep = sleep
    return client


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_it_picks_the_server_with_fewest_in_flight_then_takes_turns() -> None:
    a, b = (
        Server("http://a/v1", httpx.MockTransport(lambda r: httpx.Response(200))),
        Server("http://b/v1", httpx.MockTransport(lambda r: httpx.Response(200))),
    )
    pool = ServerPool([a, b])
    assert [pool.acquire(), pool.acquire()] == [a, b]
    pool.release(a)
    assert pool.acquire() is a  # b still has one in flight
    pool.release(a), pool.release(b)
    assert pool.acquire() is b and pool.acquire(avoid=b) is a  # ties go to the least recently chosen; `avoid` is honoured


def test_a_server_that_failed_rests_while_another_can_serve() -> None:
    a, b = (
        Server("http://a/v1", httpx.MockTransport(lambda r: httpx.Response(200))),
        Server("http://b/v1", httpx.MockTransport(lambda r: httpx.Response(200))),
    )
    pool = ServerPool([a, b], max_in_flight=1, rest_s=60)
    pool.release(pool.acquire(), failed=True)  # a failed
    assert [pool.acquire(), pool.acquire()] == [b, a]  # b first; a still serves when b is full
    assert (a.failures, a.streak, b.streak) == (1, 1, 0)


def test_a_full_pool_makes_the_caller_wait_for_room_or_time_out() -> None:
    server = Server("http://a/v1", httpx.MockTransport(lambda r: httpx.Response(200)))
    pool = ServerPool([server], max_in_flight=1)
    pool.acquire()
    with pytest.raises(httpx.PoolTimeout, match="1 requests in flight"):
        pool.acquire(timeout=0.05)
    started = time.monotonic()
    threading.Timer(0.1, pool.release, args=[server]).start()
    assert pool.acquire(timeout=5) is server and time.monotonic() - started >= 0.09


def test_concurrent_requests_spread_over_the_servers_and_respect_the_cap() -> None:
    a, b = Backend(delay_s=0.15), Backend(delay_s=0.15)
    with backends(a, b) as urls:
        client = _pooled(urls, cap=2)
        with ExitStack():
            threads = [threading.Thread(target=lambda: client.post(f"{urls[0]}/chat/completions", json={})) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
    assert (a.hits, b.hits) == (4, 4)
    assert max(a.peak, b.peak) == 2  # eight callers, two servers, never more than two at once on either


def test_a_5xx_or_a_dead_server_is_retried_on_another_server() -> None:
    down, up = Backend((503, {}, b"overloaded")), Backend()
    with backends(down, up) as urls:
        client = _pooled(urls)
        assert [client.post(f"{urls[0]}/chat/completions", json={}).status_code for _ in range(4)] == [200] * 4
        assert up.hits == 4 and down.hits == 1  # retried on the other server, then left to rest
    good = Backend()
    with backends(good) as [url]:
        client = _pooled([f"http://127.0.0.1:{_closed_port()}/v1", url])
        assert client.get(f"http://127.0.0.1:{_closed_port()}/v1/models").status_code == 200  # another path suffix, kept
    assert good.hits == 1


def test_a_429_waits_its_retry_after_and_a_hopeless_request_returns_the_last_answer() -> None:
    slept: list[float] = []
    limited = Backend()
    limited.script = [(429, {"Retry-After": "0.7"}, b"slow down")]
    with backends(limited) as urls:
        client = _pooled(urls, sleep=slept.append)
        assert client.post(f"{urls[0]}/chat/completions", json={}).status_code == 200
    assert slept == [0.7] and limited.hits == 2
    broken = Backend((502, {}, b"bad gateway"))
    slept.clear()
    with backends(broken) as urls:
        response = _pooled(urls, attempts=3, sleep=slept.append).post(f"{urls[0]}/chat/completions", json={})
    assert (response.status_code, response.text, broken.hits) == (502, "bad gateway", 3)
    assert len(slept) == 2 and 0.125 <= slept[0] <= 0.25 and 0.25 <= slept[1] <= 0.5  # exponential, with jitter


def test_an_openai_agent_plays_an_episode_through_a_pool_with_one_server_down() -> None:
    def completion(call: dict[str, Any]) -> bytes:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
            ],
        }
        return json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }
        ).encode()

    answer = completion({"name": "say", "arguments": {"word": "cloud"}})  # toolgym/echo seed 1: "Say the word cloud."
    down, up = Backend((500, {}, b"boom")), Backend((200, {"Content-Type": "application/json"}, answer))
    with backends(down, up) as urls:
        connection = Connection(base_url=urls[0], servers=tuple(urls), any_address=True, name="fleet-episode", max_in_flight=4)
        env = make("toolgym/echo", seed=1)
        policy = policy_from_config(
            {"kind": "openai", "name": "pooled", "model": "m", "sampling": {"max_retries": 2}}, env, 1, connection=connection
        )
        record = run_episode(env, policy)
    assert record["header"]["score"]["passed"] and up.hits == 1 and down.hits <= 1
