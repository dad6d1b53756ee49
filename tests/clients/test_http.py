"""practicum_client._http's retry rules, on a mock transport: what may be sent twice and what may not."""

from __future__ import annotations

import httpx
import pytest

from practicum_client import PracticumError, RetryPolicy, TransportError
from practicum_client._http import Http


def _http(answers: list[httpx.Response | Exception], seen: list[httpx.Request], waits: list[float]) -> Http:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return Http(
        "http://lab",
        "prk_k",
        retry=RetryPolicy(retries=3, backoff_s=0.1, max_backoff_s=1.0),
        transport=httpx.MockTransport(handler),
        sleep=waits.append,
    )


def test_a_plain_write_is_not_resent_after_a_500_or_a_lost_answer_but_a_keyed_one_is() -> None:
    seen: list[httpx.Request] = []
    waits: list[float] = []
    with pytest.raises(PracticumError) as refused:
        _http([httpx.Response(500, json={"error": {"code": "boom", "message": "x"}})], seen, waits).request("POST", "runs/")
    assert (refused.value.code, len(seen)) == ("boom", 1)
    with pytest.raises(TransportError):
        _http([httpx.ReadTimeout("lost")], seen, waits).request("POST", "runs/")
    assert len(seen) == 2
    keyed = _http([httpx.ReadTimeout("lost"), httpx.Response(500), httpx.Response(201, json={})], seen, waits)
    assert keyed.request("POST", "episodes/", headers={"Idempotency-Key": "k1"}).status_code == 201
    assert len(seen) == 5 and len(waits) == 2


def test_429_and_503_are_waited_out_honouring_retry_after_and_then_give_up() -> None:
    seen: list[httpx.Request] = []
    waits: list[float] = []
    throttled = httpx.Response(429, headers={"Retry-After": "7"}, json={"error": {"code": "throttled", "message": "later"}})
    answers: list[httpx.Response | Exception] = [throttled, httpx.Response(503), httpx.ConnectError("down"), httpx.Response(200, json={})]
    assert _http(answers, seen, waits).request("POST", "runs/").status_code == 200
    assert waits[0] == 1.0 and len(waits) == 3  # Retry-After 7, capped at max_backoff_s
    with pytest.raises(PracticumError) as exhausted:
        _http([throttled] * 4, seen, waits).request("GET", "runs/")
    assert (exhausted.value.status, exhausted.value.code) == (429, "throttled")


def test_an_answer_that_is_not_the_servers_error_shape_keeps_its_status_and_text() -> None:
    with pytest.raises(PracticumError) as refused:
        _http([httpx.Response(418, text="<html>teapot</html>")], [], []).request("GET", "runs/")
    assert (refused.value.code, refused.value.status, refused.value.message) == ("http_418", 418, "<html>teapot</html>")
