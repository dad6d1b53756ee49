"""The recording proxy between the `openai` client and a loopback upstream, uploading to a live server: the episode
holds the right steps and tool calls, the key is forwarded but never stored, an upstream 500 is passed through and
recorded, streamed answers are passed on and reassembled."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from lab.trajectories.models import Episode, Step
from practicum_client.proxy import RecordingProxy
from practicum_client.proxy.app import TOKEN_HEADER
from practicum_client.proxy.server import serving
from tests.clients.upstream import MODEL, Upstream

KEY = "sk-proxy-secret-4f9a1c"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def upstream() -> Iterator[tuple[Upstream, str]]:
    stub = Upstream()
    with serving(stub) as root:
        yield stub, f"{root}/v1"


def _converse(model: openai.OpenAI, city: str, **extra: Any) -> list[dict[str, Any]]:
    """A harness's loop: ask, run the tool the model calls, send the result back, get the answer."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": f"What is the weather in {city}"},
    ]
    first = model.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.0, **extra)  # type: ignore[call-overload]
    [call] = first.choices[0].message.tool_calls
    messages += [first.choices[0].message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
    second = model.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0.0, **extra)  # type: ignore[call-overload]
    assert second.choices[0].message.content == f"It is sunny in {city}."
    return messages


def _recorded(episode: Episode) -> dict[str, Any]:
    """What the proxy recorded beside the messages (the record's `metadata`, kept in the episode's header)."""
    return dict(episode.meta["header"]["meta"]["metadata"])


def _stored(episode: Episode) -> str:
    steps = list(Step.objects.filter(episode=episode).values())
    return json.dumps([Episode.objects.filter(pk=episode.pk).values().get(), steps], default=str)


def test_conversations_with_tool_calls_become_episodes_and_errors_are_passed_through(
    connect: Any, celery_worker: Any, upstream: tuple[Upstream, str]
) -> None:
    stub, upstream_url = upstream
    proxy = RecordingProxy(connect(), upstream_url, idle_s=30, interval_s=0.05, forward_credentials=True)
    with proxy.running() as base_url:
        model = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, default_headers={TOKEN_HEADER: proxy.token})
        assert [m.id for m in model.models.list()] == [MODEL]
        _converse(model, "Paris")
        _converse(model, "Oslo")  # interleaved would group the same way: by what each request's messages extend
        with pytest.raises(openai.InternalServerError) as failed:
            model.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "explode now"}])
        assert failed.value.status_code == 500 and "the model server exploded" in str(failed.value)
    assert len(proxy.episode_ids) == 3 and Episode.objects.count() == 3

    # The key went upstream with every request, and nothing of the proxy's own headers did.
    assert {s["headers"].get("authorization") for s in stub.seen} == {f"Bearer {KEY}"}
    assert not any(name.startswith("x-practicum") for s in stub.seen for name in s["headers"])

    paris = next(e for e in Episode.objects.all() if "Paris" in _stored(e))
    steps = connect().episodes.steps(paris.pk)
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert [(c["name"], c["arguments"]) for c in steps[2]["tool_calls"]] == [("get_weather", {"city": "Paris"})]
    assert [(r["content"], r.get("is_error", False)) for r in steps[2]["results"]] == [("sunny", False)]
    assert steps[3]["message"] == "It is sunny in Paris."
    meta = _recorded(paris)
    assert [c["status"] for c in meta["calls"]] == [200, 200] and meta["errors"] == []
    assert [c["finish_reason"] for c in meta["calls"]] == ["tool_calls", "stop"]

    exploded = next(e for e in Episode.objects.all() if "explode now" in _stored(e))
    [error] = _recorded(exploded)["errors"]
    assert error["status"] == 500 and "the model server exploded" in error["body"]
    for episode in Episode.objects.all():
        assert KEY not in _stored(episode)


def test_streamed_answers_are_passed_on_and_a_header_groups_calls(connect: Any, celery_worker: Any, upstream: tuple[Upstream, str]) -> None:
    _, upstream_url = upstream
    proxy = RecordingProxy(connect(), upstream_url, idle_s=30, interval_s=0.05, forward_credentials=True)
    with proxy.running() as base_url:
        model = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, default_headers={TOKEN_HEADER: proxy.token})
        stream = model.chat.completions.create(
            model=MODEL, stream=True, tools=TOOLS, messages=[{"role": "user", "content": "What is the weather in Rome"}]
        )
        deltas = [chunk.choices[0].delta for chunk in stream if chunk.choices]
        arguments = "".join(d.tool_calls[0].function.arguments or "" for d in deltas if d.tool_calls)
        assert json.loads(arguments) == {"city": "Rome"}  # the client got the chunks as the upstream sent them

        grouped = {"extra_headers": {"X-Practicum-Episode": "ticket-7"}}
        for city in ("Lima", "Kyiv"):  # two conversations, one episode by the harness's say-so
            for _chunk in model.chat.completions.create(
                model=MODEL,
                stream=True,
                tools=TOOLS,
                **grouped,  # type: ignore[call-overload]
                messages=[{"role": "user", "content": f"What is the weather in {city}"}],
            ):
                pass
    assert Episode.objects.count() == 2
    rome = next(e for e in Episode.objects.all() if _recorded(e)["conversation"] != "ticket-7")
    steps = connect().episodes.steps(rome.pk)
    assert [(c["name"], c["arguments"]) for c in steps[-1]["tool_calls"]] == [("get_weather", {"city": "Rome"})]
    [call] = _recorded(rome)["calls"]
    assert (call["stream"], call["finish_reason"], call["usage"]["completion_tokens"]) == (True, "tool_calls", 7)
    ticket = Episode.objects.get(meta__header__meta__metadata__conversation="ticket-7")
    assert len(_recorded(ticket)["calls"]) == 2 and "Kyiv" in _stored(ticket)


def test_an_unreachable_upstream_answers_502_and_is_recorded(connect: Any, celery_worker: Any) -> None:
    proxy = RecordingProxy(
        connect(), "http://127.0.0.1:9/v1", idle_s=30, interval_s=0.05, forward_credentials=True
    )  # port 9: nothing listens
    with proxy.running() as base_url:
        model = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, default_headers={TOKEN_HEADER: proxy.token})
        with pytest.raises(openai.APIStatusError) as failed:
            model.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello"}])
        assert failed.value.status_code == 502
    [episode] = Episode.objects.all()
    assert _recorded(episode)["errors"][0]["status"] == 502 and KEY not in _stored(episode)


def test_an_upstream_that_breaks_off_mid_stream_drops_the_harness_and_is_recorded(
    connect: Any, celery_worker: Any, upstream: tuple[Upstream, str]
) -> None:
    _, upstream_url = upstream
    proxy = RecordingProxy(connect(), upstream_url, idle_s=30, interval_s=0.05, forward_credentials=True)
    with proxy.running() as base_url:
        model = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, default_headers={TOKEN_HEADER: proxy.token})
        with pytest.raises(openai.APIError):
            list(model.chat.completions.create(model=MODEL, stream=True, messages=[{"role": "user", "content": "break in Rome"}]))
    [episode] = Episode.objects.all()
    [error] = _recorded(episode)["errors"]
    assert error["status"] == 200 and "broke off" in error["message"]
