"""The openai policy against a real HTTP server on loopback: native tool calls, timeouts, retries, rate limits."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from environments.registry import make
from environments.replay import replay_record
from environments.runner import run_episode
from training.policies import Connection, HarnessStop, policy_from_config


def _config(endpoint: str, **sampling: Any) -> dict[str, Any]:
    return {
        "kind": "openai",
        "name": "served-tiny",
        "model": "tiny",
        "endpoint": endpoint,
        "sampling": {"timeout_s": 5.0, "max_retries": 2, **sampling},
        "harness": {"max_new_tokens": 16},
    }


def _declared(endpoint: str, key: str = "EMPTY") -> Connection:
    """The loopback server as an endpoint the operator declared (private addresses allowed)."""
    return Connection(base_url=endpoint, api_key=key, any_address=True, name="local")


def test_it_plays_a_toolgym_episode_through_native_tool_calls(chat_server: Any, monkeypatch: Any) -> None:
    server, endpoint = chat_server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")  # never read: the caller hands the key over

    def lookup(body: dict[str, Any]) -> dict[str, Any]:
        item = re.search(r"color of the (\w+)", body["messages"][1]["content"]).group(1)  # type: ignore[union-attr]
        return {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {"id": "call_look", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"item": item})}}
            ],
        }

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        tool = body["messages"][-1]
        assert tool["role"] == "tool" and tool["tool_call_id"] == "call_look"
        color = json.loads(tool["content"])["color"]
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_ans", "type": "function", "function": {"name": "answer", "arguments": json.dumps({"color": color})}}
            ],
        }

    server.script = [lookup, answer]
    env = make("toolgym/lookup", seed=3)
    policy = policy_from_config(_config(endpoint), env, 3, connection=_declared(endpoint, "sk-test-secret-123"))
    record = run_episode(env, policy)
    assert record["header"]["termination_reason"] == "horizon_reached" or record["header"]["score"]["passed"]
    assert record["header"]["score"]["composite"] == pytest.approx(1.0)
    agent = record["steps"][1:]
    assert [c["name"] for s in agent for c in s["tool_calls"]] == ["lookup", "answer"]
    assert agent[0]["tool_calls"][0]["id"] == "call_look" and agent[0]["message"] == "Looking it up."
    first = server.requests[0]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in first["tools"]} == {"lookup", "answer"}
    assert first["_authorization"] == "Bearer sk-test-secret-123"
    assert "sk-test-secret-123" not in json.dumps(record)  # the key never reaches the episode
    assert record["header"]["policy"]["endpoint_name"] == "local"
    assert replay_record(record)["ok"]


def test_it_retries_after_a_timeout_and_records_the_served_model_tokens(chat_server: Any) -> None:
    server, endpoint = chat_server
    server.load()  # loading the model must not count against the timeout
    server.script = ["timeout", "model"]
    server.slow_s = 3.5
    env = make("toolgym/lookup", seed=1)
    policy = policy_from_config(_config(endpoint, timeout_s=3.0), env, 1, connection=_declared(endpoint))
    action = policy.act([{"index": 0, "source": "env", "message": env.reset().text}], env.tools())
    assert len(server.requests) == 2  # the first timed out, the client retried
    assert server.requests[0]["messages"] == server.requests[1]["messages"]
    assert action.token_ids and len(action.token_ids) == len(action.logprobs or [])
    assert all(lp <= 0 for lp in action.logprobs or [])
    assert action.error is not None or action.tool_calls  # the tiny model's output was parsed either way


def test_it_waits_out_a_rate_limit_and_succeeds(chat_server: Any, tool_reply: Any) -> None:
    server, endpoint = chat_server
    server.script = ["429", "429", tool_reply("lookup", {"item": "lamp"})]
    env = make("toolgym/lookup", seed=1)
    policy = policy_from_config(_config(endpoint, max_retries=3), env, 1, connection=_declared(endpoint))
    action = policy.act([{"index": 0, "source": "env", "message": "q"}], env.tools())
    assert len(server.requests) == 3
    assert [(c.name, c.arguments) for c in action.tool_calls] == [("lookup", {"item": "lamp"})]


def test_exhausted_retries_end_the_episode_as_an_infrastructure_error(chat_server: Any) -> None:
    server, endpoint = chat_server
    server.default = "timeout"
    server.slow_s = 0.6
    env = make("toolgym/lookup", seed=1)
    policy = policy_from_config(_config(endpoint, timeout_s=0.2, max_retries=1), env, 1, connection=_declared(endpoint))
    with pytest.raises(HarnessStop) as raised:
        policy.act([{"index": 0, "source": "env", "message": "q"}], env.tools())
    assert raised.value.termination_reason == "infrastructure_error"
    assert len(server.requests) == 2


def test_malformed_native_arguments_become_an_invalid_action_sent_back_to_the_model(chat_server: Any) -> None:
    server, endpoint = chat_server
    server.script = [
        lambda body: {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_bad", "type": "function", "function": {"name": "lookup", "arguments": '{"item": "lamp"'}}],
        },
        lambda body: {"role": "assistant", "content": "I give up."},
    ]
    env = make("toolgym/lookup", seed=1)
    policy = policy_from_config(
        {**_config(endpoint), "harness": {"max_new_tokens": 16, "max_consecutive_errors": 2}}, env, 1, connection=_declared(endpoint)
    )
    record = run_episode(env, policy, max_consecutive_errors=2)
    assert record["header"]["termination_reason"] == "too_many_errors"
    first, second = record["steps"][1], record["steps"][2]
    assert "not valid JSON" in first["meta"]["invalid_action"] and first["results"][0]["is_error"]
    assert second["meta"]["invalid_action"].startswith("no tool call found")
    resent = server.requests[1]["messages"]
    assert resent[-1]["role"] == "user" and "not valid JSON" in resent[-1]["content"]
