"""How the recording proxy groups chat completions into conversations (no server: the recorder alone)."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from practicum_client.cli import _listen, main
from practicum_client.proxy.recorder import Recorder, message_signature
from practicum_client.proxy.stream import StreamAssembler

SYSTEM = {"role": "system", "content": "Be brief."}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _reply(text: str | None = None, call: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call:
        message["tool_calls"] = [{"id": call, "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    return message


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def recorded() -> tuple[Recorder, list[dict[str, Any]], Clock]:
    delivered: list[dict[str, Any]] = []
    clock = Clock()
    return Recorder(delivered.extend, idle_s=10, env="support", clock=clock), delivered, clock


def test_interleaved_conversations_are_told_apart_by_what_each_request_extends(recorded: Any) -> None:
    recorder, delivered, _ = recorded
    a1 = [SYSTEM, _user("a")]
    b1 = [SYSTEM, _user("b")]
    a = recorder.exchange({"model": "m", "messages": a1, "temperature": 0.2}, reply=_reply(call="call_1"))
    b = recorder.exchange({"model": "m", "messages": b1}, reply=_reply("B"))
    # The harness echoes the reply back with fields of its own and the arguments re-serialised.
    echoed = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{ "q":"x" }'}}],
    }
    a2 = recorder.exchange(
        {"model": "m", "messages": [*a1, echoed, {"role": "tool", "tool_call_id": "call_1", "content": "found"}]}, reply=_reply("A")
    )
    b2 = recorder.exchange({"model": "m", "messages": [*b1, _reply("B"), _user("more")]}, reply=_reply("B2"))
    assert (a2, b2) == (a, b) and a != b
    assert recorder.close_idle(everything=True) == 2
    first = next(r for r in delivered if r["metadata"]["conversation"] == a)
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert (first["model"], first["temperature"], first["env"], len(first["metadata"]["calls"])) == ("m", 0.2, "support", 2)


def test_a_failed_call_retried_continues_its_conversation_with_the_error_kept(recorded: Any) -> None:
    recorder, delivered, _ = recorded
    messages = [_user("hi")]
    key = recorder.exchange({"messages": messages}, error={"status": 500, "body": "boom"})
    assert recorder.exchange({"messages": messages}, reply=_reply("hello")) == key
    recorder.close_idle(everything=True)
    [record] = delivered
    assert record["metadata"]["errors"] == [{"at_message": 1, "status": 500, "body": "boom"}]
    assert [m["content"] for m in record["messages"]] == ["hi", "hello"]


def test_idle_conversations_are_handed_over_and_a_later_continuation_starts_anew(recorded: Any) -> None:
    recorder, delivered, clock = recorded
    first = recorder.exchange({"messages": [_user("q")]}, reply=_reply("a"))
    clock.now = 5
    assert recorder.close_idle() == 0
    named = recorder.exchange({"messages": [_user("other")]}, reply=_reply("b"), episode="ticket-9")
    clock.now = 12
    assert recorder.close_idle() == 1 and [r["metadata"]["conversation"] for r in delivered] == [first]
    later = recorder.exchange({"messages": [_user("q"), _reply("a"), _user("q2")]}, reply=_reply("a2"))
    assert later not in (first, named)
    assert recorder.exchange({"messages": [_user("unrelated")]}, reply=_reply("c"), episode="ticket-9") == named


def test_a_stream_is_reassembled_into_the_message_it_amounts_to() -> None:
    assembler = StreamAssembler()
    events = [
        b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\r\n\r\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"lo","tool_calls":[{"index":0,"id":"t1","function":{"name":"lo',
        b'okup","arguments":"{\\"q\\":"}}]}}]}\n\ndata: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":',
        b'{"arguments":" 1}"}}]},"finish_reason":"tool_calls"}]}\n\n: keep-alive\n\ndata: [DONE]\n\n',
    ]
    for event in events:  # cut mid-event, as a network delivers them
        assembler.feed(event)
    message = assembler.message()
    assert message["content"] == "Hello" and message["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"q": 1}'}
    assert assembler.details() == {"id": "c1", "model": "m", "finish_reason": "tool_calls"}
    assert message_signature(message) == message_signature({**message, "refusal": None})


@pytest.mark.parametrize(("text", "expected"), [("127.0.0.1:8787", ("127.0.0.1", 8787)), ("[::1]:9000", ("::1", 9000))])
def test_listen_takes_host_and_port(text: str, expected: tuple[str, int]) -> None:
    assert _listen(text) == expected


@pytest.mark.parametrize("text", ["8787", "localhost:", "localhost:http", "h:70000"])
def test_listen_refuses_what_is_not_host_and_port(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="HOST:PORT"):
        _listen(text)


def test_proxy_command_refuses_a_bad_upstream_or_idle(capsys: pytest.CaptureFixture[str]) -> None:
    connection = ["--url", "http://127.0.0.1:1", "--key", "prk_x"]
    assert main([*connection, "proxy", "--upstream", "ftp://models"]) == 1
    assert "--upstream 'ftp://models': must start with http:// or https://" in capsys.readouterr().err
    assert main([*connection, "proxy", "--upstream", "http://models/v1", "--idle", "0"]) == 1
    assert "--idle 0.0: must be above 0" in capsys.readouterr().err
