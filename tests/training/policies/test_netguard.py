"""The outbound guard against a real HTTP server on loopback, with a resolver that can change its answer."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from environments.registry import make
from tests.loopback_http import loopback_server
from training.policies import Connection, HarnessStop, netguard, policy_from_config
from training.policies.netguard import address_problem, guarded_client, host_problem


class _Server:
    def __init__(self) -> None:
        self.hits: list[str] = []
        self.redirect_to = ""


@pytest.fixture
def loopback() -> Iterator[tuple[_Server, int]]:
    state = _Server()

    def answer(request: Any) -> tuple[int, dict[str, str], bytes]:
        state.hits.append(f"{request.headers.get('Host')} {request.path} {request.headers.get('Authorization')}")
        if state.redirect_to:
            return 307, {"Location": state.redirect_to}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps({"ok": True}).encode()

    with loopback_server(answer) as port:
        yield state, port


def _dns(monkeypatch: Any, answers: dict[str, list[str]]) -> list[str]:
    """Replace DNS with `answers` (host -> addresses); returns the log of lookups."""
    lookups: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        if host in answers:
            return answers[host]
        raise OSError(f"no such host {host}")

    monkeypatch.setattr(netguard, "resolve", resolve)
    return lookups


@pytest.mark.parametrize(
    ("address", "label"),
    [
        ("127.0.0.1", "loopback"),
        ("10.2.3.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a public"),
    ],
)
def test_it_names_why_a_non_public_address_is_refused(address: str, label: str) -> None:
    problem = address_problem(address)
    assert problem is not None and label in problem


def test_a_public_address_or_a_listed_private_network_is_allowed() -> None:
    assert address_problem("93.184.216.34") is None
    assert address_problem("10.2.3.4", [ipaddress.ip_network("10.2.0.0/16")]) is None
    assert address_problem("10.3.0.1", [ipaddress.ip_network("10.2.0.0/16")]) == "10.3.0.1 is a private address"


def test_a_host_with_any_refused_address_is_refused(monkeypatch: Any) -> None:
    _dns(monkeypatch, {"mixed.example": ["93.184.216.34", "127.0.0.1"]})
    assert host_problem("mixed.example", 443) == "mixed.example resolves to a refused address: 127.0.0.1 is a loopback address"
    assert host_problem("nowhere.example", 443) is not None and "does not resolve" in str(host_problem("nowhere.example", 443))


def test_a_dns_change_after_validation_cannot_reach_loopback(monkeypatch: Any, loopback: tuple[_Server, int]) -> None:
    server, port = loopback
    answers = {"api.example.test": ["93.184.216.34"]}
    _dns(monkeypatch, answers)
    assert host_problem("api.example.test", port) is None  # what validation saw
    answers["api.example.test"] = ["127.0.0.1"]  # the attacker's DNS now answers loopback
    client = guarded_client(Connection(base_url=f"http://api.example.test:{port}/v1", api_key="sk-guarded"), timeout=2.0)
    with pytest.raises(httpx.ConnectError) as raised:
        client.get(f"http://api.example.test:{port}/v1/models")
    assert "127.0.0.1 is a loopback address" in str(raised.value)
    assert server.hits == []  # nothing reached the server
    assert "sk-guarded" not in str(raised.value)


def test_it_connects_to_the_checked_address_when_the_operator_allows_it(monkeypatch: Any, loopback: tuple[_Server, int]) -> None:
    server, port = loopback
    _dns(monkeypatch, {"lab.internal": ["127.0.0.1"]})
    connection = Connection(base_url=f"http://lab.internal:{port}/v1", allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    response = guarded_client(connection, timeout=2.0).get(f"http://lab.internal:{port}/v1/models")
    assert response.json() == {"ok": True}
    assert server.hits == [f"lab.internal:{port} /v1/models None"]  # the Host header keeps the name


def test_a_redirect_to_another_origin_is_refused_and_the_key_stays_home(loopback: tuple[_Server, int]) -> None:
    server, port = loopback
    server.redirect_to = "http://169.254.169.254/latest/meta-data/"
    connection = Connection(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-operator", any_address=True)
    client = guarded_client(connection, timeout=2.0)
    with pytest.raises(httpx.ConnectError) as raised:
        client.get(f"http://127.0.0.1:{port}/v1/models", follow_redirects=True)
    assert "only the agent's endpoint may be called" in str(raised.value)
    assert len(server.hits) == 1


def test_without_a_connection_the_policy_refuses_loopback_and_says_why(loopback: tuple[_Server, int], monkeypatch: Any) -> None:
    server, port = loopback
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-never-read")
    env = make("toolgym/lookup", seed=1)
    config = {"kind": "openai", "name": "free", "model": "m", "endpoint": f"http://127.0.0.1:{port}/v1", "sampling": {"max_retries": 0}}
    policy = policy_from_config(config, env, 1)
    with pytest.raises(HarnessStop) as raised:
        policy.act([{"index": 0, "source": "env", "message": "q"}], env.tools())
    assert raised.value.termination_reason == "infrastructure_error"
    assert "127.0.0.1 is a loopback address" in str(raised.value)
    assert server.hits == []


def test_the_key_is_not_in_the_connection_repr() -> None:
    assert "sk-secret" not in repr(Connection(base_url="https://api.example.com/v1", api_key="sk-secret"))
