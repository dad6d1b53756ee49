"""Failed sign-ins and API-key attempts are rate-limited per address and username / key prefix; successes never."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from lab.projects import throttle

pytestmark = pytest.mark.django_db

LIMIT = 3
LOGIN = "/accounts/login/"
API = "/api/v1/tasks/"


@pytest.fixture(autouse=True)
def _small_limit(settings: Any) -> None:
    settings.PRACTICUM_AUTH_FAILURES_PER_MINUTE = LIMIT


def _login(client: Any, username: str, password: str, address: str = "10.0.0.1") -> Any:
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_repeated_failed_sign_ins_lock_that_username_from_that_address_with_a_message(client: Any, alice: Any) -> None:
    for _ in range(LIMIT):
        response = _login(client, "alice", "wrong")
        assert response.status_code == 200 and b"Please enter a correct username and password" in response.content
    refused = _login(client, "alice", "alice-password")  # even the right password: it is not even checked now
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert b"Too many failed sign-ins for this username from your address. Try again in" in refused.content
    assert "_auth_user_id" not in client.session
    assert _login(client, "alice", "alice-password", address="10.0.0.2").status_code == 302  # another address
    assert _login(APIClient(), "bob", "wrong").status_code == 200  # another username from the same address


def test_the_lock_ends_with_its_minute(client: Any, alice: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000_040.0]  # 20 s into a minute
    monkeypatch.setattr(throttle.time, "time", lambda: now[0])
    for _ in range(LIMIT):
        _login(client, "alice", "wrong")
    refused = _login(client, "alice", "alice-password")
    assert refused.status_code == 429 and refused["Retry-After"] == "40"
    now[0] += 40
    assert _login(client, "alice", "alice-password").status_code == 302


def test_successful_sign_ins_are_never_counted(client: Any, alice: Any) -> None:
    for _ in range(LIMIT * 3):
        assert _login(client, "alice", "alice-password").status_code == 302
        client.logout()


def test_the_admin_sign_in_is_rate_limited_too(client: Any, alice: Any) -> None:
    alice.is_staff = True
    alice.save()
    for _ in range(LIMIT):
        client.post("/admin/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR="10.0.0.1")
    refused = client.post("/admin/login/", {"username": "alice", "password": "alice-password"}, REMOTE_ADDR="10.0.0.1")
    assert b"Too many failed sign-ins" in refused.content and "_auth_user_id" not in client.session


def test_repeated_bad_api_keys_answer_429_rate_limited_with_retry_after(alice: Any, project_a: Any, key_for: Any) -> None:
    good = key_for(alice, project_a)
    guessing = APIClient(REMOTE_ADDR="10.0.0.9")
    guessing.credentials(HTTP_AUTHORIZATION=f"Bearer {good[:10]}{'x' * 33}")
    for _ in range(LIMIT):
        response = guessing.get(API)
        assert response.status_code == 401 and response.json()["error"]["code"] == "authentication_failed"
    refused = guessing.get(API)
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["error"]["code"] == "rate_limited" and "Too many failed API-key attempts" in refused.json()["error"]["message"]
    guessing.credentials(HTTP_AUTHORIZATION=f"Bearer {good}")
    assert guessing.get(API).status_code == 429  # that prefix is locked from this address, right key or not
    elsewhere = APIClient(REMOTE_ADDR="10.0.0.10")
    elsewhere.credentials(HTTP_AUTHORIZATION=f"Bearer {good}")
    assert elsewhere.get(API).status_code == 200


def test_a_busy_client_with_a_good_key_is_never_throttled(alice: Any, project_a: Any, key_for: Any) -> None:
    busy = APIClient(REMOTE_ADDR="10.0.0.9")
    busy.credentials(HTTP_AUTHORIZATION=f"Bearer {key_for(alice, project_a)}")
    assert [busy.get(API).status_code for _ in range(LIMIT * 3)] == [200] * (LIMIT * 3)


def test_a_revoked_key_counts_as_a_failure(mallory: tuple[Any, str]) -> None:
    _, raw = mallory
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert [client.get(API).status_code for _ in range(LIMIT + 1)] == [401] * LIMIT + [429]


# --- behind a reverse proxy, and per account ---------------------------------------------------------------------

PROXY = "10.9.9.9"


def _via_proxy(client: Any, username: str, password: str, forwarded: str) -> Any:
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded)


def test_behind_a_trusted_proxy_one_attacker_does_not_lock_everyone_out(client: Any, alice: Any, settings: Any) -> None:
    settings.PRACTICUM_TRUSTED_PROXIES = 1
    for _ in range(LIMIT):
        _via_proxy(client, "alice", "wrong", "203.0.113.66")
    assert _via_proxy(client, "alice", "alice-password", "203.0.113.66").status_code == 429  # the attacker's own address
    assert _via_proxy(APIClient(), "alice", "alice-password", "198.51.100.7").status_code == 302  # alice, through the same proxy


def test_forged_forwarded_addresses_are_ignored_beyond_the_trusted_proxies(client: Any, alice: Any, settings: Any) -> None:
    settings.PRACTICUM_TRUSTED_PROXIES = 1
    # The client writes whatever it likes on the left; the trusted proxy appends the address it saw on the right.
    for i in range(LIMIT):
        _via_proxy(client, "alice", "wrong", f"192.0.2.{i}, 203.0.113.66")
    assert _via_proxy(client, "alice", "alice-password", "192.0.2.200, 203.0.113.66").status_code == 429
    settings.PRACTICUM_TRUSTED_PROXIES = 0  # no proxy declared: the header is not read at all
    for i in range(LIMIT):
        _via_proxy(client, "bob", "wrong", f"192.0.2.{i}")
    assert _via_proxy(client, "bob", "wrong", "192.0.2.99").status_code == 429


def test_failures_on_one_account_from_many_addresses_lock_that_account(client: Any, alice: Any, settings: Any) -> None:
    settings.PRACTICUM_AUTH_ACCOUNT_FAILURES_PER_MINUTE = 5
    for i in range(5):
        assert _login(client, "alice", "wrong", address=f"10.1.0.{i}").status_code == 200  # each address below its own limit
    refused = _login(client, "alice", "alice-password", address="10.1.0.99")
    assert refused.status_code == 429 and b"Too many failed sign-ins for this account" in refused.content
    assert _login(client, "bob", "wrong", address="10.1.0.99").status_code == 200  # other accounts are untouched
