"""The recording proxy's own guard: a token to use it, no caller credentials upstream unless configured, paths that
cannot climb out of the upstream's base path, and a warning when it listens on every interface."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from practicum_client.proxy.app import TOKEN_HEADER, ProxyApp
from practicum_client.proxy.recorder import Recorder
from practicum_client.proxy.server import bind_warning

TOKEN = "proxy-token-0123456789abcdef"


def _app(seen: list[httpx.Request], **options: Any) -> ProxyApp:
    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": []})

    return ProxyApp(
        "http://upstream.test/v1", Recorder(lambda record: None, idle_s=60), token=TOKEN, transport=httpx.MockTransport(upstream), **options
    )


async def _call(app: ProxyApp, path: str, headers: dict[str, str], raw_path: bytes | None = None) -> int:
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": raw_path or path.encode(),
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return int(sent[0]["status"])


@pytest.mark.anyio
async def test_a_request_without_the_proxy_token_is_refused_and_never_forwarded() -> None:
    seen: list[httpx.Request] = []
    app = _app(seen)
    assert await _call(app, "/v1/models", {}) == 401
    assert await _call(app, "/v1/models", {TOKEN_HEADER: "wrong-token"}) == 401
    assert await _call(app, "/v1/models", {"Authorization": "Bearer sk-someone-elses"}) == 401
    assert seen == []
    assert await _call(app, "/v1/models", {TOKEN_HEADER: TOKEN}) == 200
    assert await _call(app, "/v1/models", {"Authorization": f"Bearer {TOKEN}"}) == 200  # as an SDK's api_key
    for weak in ("", "short"):
        with pytest.raises(ValueError, match="token"):
            ProxyApp("http://upstream.test/v1", Recorder(lambda record: None, idle_s=60), token=weak)


@pytest.mark.anyio
async def test_the_callers_cookie_and_authorization_stay_here_unless_configured() -> None:
    seen: list[httpx.Request] = []
    headers = {TOKEN_HEADER: TOKEN, "Authorization": "Bearer sk-caller-key", "Cookie": "session=abc"}
    assert await _call(_app(seen), "/v1/models", headers) == 200
    assert "authorization" not in seen[-1].headers and "cookie" not in seen[-1].headers and TOKEN_HEADER.lower() not in seen[-1].headers
    assert await _call(_app(seen, upstream_key="sk-operator-key"), "/v1/models", headers) == 200
    assert seen[-1].headers["authorization"] == "Bearer sk-operator-key" and "cookie" not in seen[-1].headers
    assert await _call(_app(seen, forward_credentials=True), "/v1/models", headers) == 200
    assert seen[-1].headers["authorization"] == "Bearer sk-caller-key" and seen[-1].headers["cookie"] == "session=abc"
    assert await _call(_app(seen, forward_credentials=True), "/v1/models", {"Authorization": f"Bearer {TOKEN}"}) == 200
    assert "authorization" not in seen[-1].headers  # the proxy's own token is never passed on


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    ["/v1/../admin", "/v1/chat/../../admin", "/v1/%2e%2e/admin", "/v1/%2E%2E%2fadmin", "/v1/..%2f..%2fadmin", "/v1/./../secrets"],
)
async def test_dot_segments_are_normalised_and_cannot_leave_the_upstream_base_path(path: str) -> None:
    seen: list[httpx.Request] = []
    status = await _call(
        _app(seen), path.replace("%2e", ".").replace("%2E", ".").replace("%2f", "/"), {TOKEN_HEADER: TOKEN}, raw_path=path.encode()
    )
    assert status == 400 and seen == []


@pytest.mark.anyio
async def test_a_normalised_path_is_forwarded_under_the_base_path() -> None:
    seen: list[httpx.Request] = []
    assert await _call(_app(seen), "/v1/./chat//models", {TOKEN_HEADER: TOKEN}, raw_path=b"/v1/./chat/%2fmodels") == 200
    assert str(seen[-1].url) == "http://upstream.test/v1/chat/models"


def test_listening_on_every_interface_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="practicum_client.proxy"):
        for host in ("0.0.0.0", "::", ""):
            assert bind_warning(host) is not None
        assert bind_warning("127.0.0.1") is None and bind_warning("::1") is None
    assert "every interface" in (bind_warning("0.0.0.0") or "")
