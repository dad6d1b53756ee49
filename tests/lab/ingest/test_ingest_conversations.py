"""Conversations that could not have happened (a tool result answering no earlier call, a call answered twice,
a call id used twice) are refused naming the record and the message, in every chat format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.ingest import IngestError, import_payload


def _call(call_id: str, name: str = "look") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _chat(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "go"}, *messages]


ASK = {"role": "assistant", "content": None, "tool_calls": [_call("c1")]}
ANSWER = {"role": "tool", "tool_call_id": "c1", "content": "seen"}
ORPHAN = {"role": "tool", "tool_call_id": "zz", "content": "from nowhere"}

OPENAI_CASES = [
    (
        "a tool message before any call",
        _chat({"role": "tool", "tool_call_id": "c1", "content": "x"}),
        "messages[1]",
        "which no earlier message made",
    ),
    ("a result answering no earlier call", _chat(ASK, ANSWER, ORPHAN), "messages[3]", "'zz', which no earlier message made"),
    ("a result answering a later call", _chat(ANSWER, ASK), "messages[1]", "'c1', which no earlier message made"),
    ("a call answered twice", _chat(ASK, ANSWER, ANSWER), "messages[3]", "answered twice (first at messages[2])"),
    (
        "a call id used twice",
        _chat(ASK, ASK),
        "messages[2].tool_calls[0]",
        "used twice (first at messages[1].tool_calls[0], still unanswered)",
    ),
    ("a call id twice in one message", _chat({**ASK, "tool_calls": [_call("c1"), _call("c1")]}), "messages[1].tool_calls[1]", "used twice"),
]


@pytest.mark.parametrize(("case", "messages", "path", "reason"), OPENAI_CASES, ids=[c[0] for c in OPENAI_CASES])
def test_openai_refuses_impossible_conversations_naming_the_message(case: str, messages: Any, path: str, reason: str) -> None:
    upload = "\n".join([json.dumps({"messages": _chat(ASK, ANSWER)}), json.dumps({"messages": messages})])
    with pytest.raises(IngestError) as caught:
        import_payload(upload, filename="chats.jsonl")
    assert (caught.value.record_index, caught.value.path, caught.value.status) == (1, path, 400)
    assert reason in caught.value.reason


def test_a_tool_message_without_an_id_and_nothing_waiting_is_refused() -> None:
    legacy = _chat(
        {"role": "assistant", "content": None, "function_call": {"name": "look", "arguments": "{}"}},
        {"role": "function", "name": "look", "content": "a"},
        {"role": "function", "name": "look", "content": "b"},
    )
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps({"messages": legacy}))
    assert caught.value.path == "messages[3]" and "no tool call is waiting" in caught.value.reason


def test_a_valid_conversation_still_joins_results_to_their_calls() -> None:
    record = import_payload(json.dumps({"messages": _chat(ASK, ANSWER, {"role": "assistant", "content": "done"})})).records[0]
    assert [(s["source"], [r["call_id"] for r in s["results"]]) for s in record["steps"]] == [
        ("user", []),
        ("agent", ["c1"]),
        ("agent", []),
    ]


def test_a_call_id_may_come_back_once_its_call_is_answered() -> None:
    # Local models number their calls per turn (call_0 each time); each result answers the latest such call.
    record = import_payload(json.dumps({"messages": _chat(ASK, ANSWER, ASK, {**ANSWER, "content": "again"})})).records[0]
    assert [[r["content"] for r in s["results"]] for s in record["steps"]] == [[], ["seen"], ["again"]]


def test_taubench_refuses_a_result_that_answers_no_call() -> None:
    run = {"task_id": 3, "reward": 1.0, "trial": 0, "info": {}, "traj": _chat(ASK, ANSWER, ORPHAN)}
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps([run]))
    assert (caught.value.record_index, caught.value.path) == (0, "[0].traj[3]") and "answers no tool call" in caught.value.reason


def test_tau2_refuses_a_result_for_a_call_nobody_made() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "look", "arguments": {}}]},
        {"role": "tool", "id": "c1", "content": "ok"},
        {"role": "tool", "id": "c9", "content": "??"},
    ]
    results = {
        "timestamp": "t",
        "info": {},
        "tasks": [],
        "simulations": [{"id": "s", "task_id": "1", "termination_reason": "agent_stop", "messages": messages}],
    }
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps(results))
    assert caught.value.path == "simulations[0].messages[3]" and "'c9', which no earlier message made" in caught.value.reason


def test_inspect_refuses_a_tool_message_before_any_call() -> None:
    sample = {
        "id": 1,
        "epoch": 1,
        "target": "x",
        "messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "t1", "content": "r"}],
    }
    log = {"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [sample]}
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps(log))
    assert caught.value.path == "samples[0].messages[1]" and "answers no tool call" in caught.value.reason


def test_sharegpt_refuses_an_observation_with_no_function_call_before_it() -> None:
    conversation = {"conversations": [{"from": "human", "value": "hi"}, {"from": "observation", "value": "{}"}]}
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps(conversation))
    assert caught.value.path == "conversations[1]" and "a tool result before any tool call" in caught.value.reason


def test_sharegpt_refuses_a_second_observation_for_one_call() -> None:
    turns = [
        {"from": "human", "value": "hi"},
        {"from": "function_call", "value": json.dumps({"name": "look", "arguments": {}})},
        {"from": "observation", "value": "a"},
        {"from": "observation", "value": "b"},
    ]
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps({"conversations": turns}))
    assert caught.value.path == "conversations[3]" and "no tool call is waiting" in caught.value.reason


def test_atif_refuses_a_call_id_used_by_two_steps() -> None:
    def step(step_id: int) -> dict[str, Any]:
        return {"step_id": step_id, "source": "agent", "tool_calls": [{"tool_call_id": "c1", "function_name": "look", "arguments": {}}]}

    trajectory = {"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [step(1), step(2)]}
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps(trajectory))
    assert (
        caught.value.path == "steps[1].tool_calls[0]"
        and "used twice (first at steps[0].tool_calls[0], still unanswered)" in caught.value.reason
    )


def _native(*steps: dict[str, Any]) -> dict[str, Any]:
    from environments.trajectory import make_step, new_record

    return new_record(
        header={"env": "toyenv", "task": "t", "source": "upload"}, steps=[make_step(index=i, **s) for i, s in enumerate(steps)]
    )


LOOK = {"id": "c1", "name": "look", "arguments": {}}
ENV_RESULT = {"source": "env", "results": [{"call_id": "c1", "content": "late"}]}


def test_a_native_record_that_is_no_chat_is_stored_with_its_problems_in_the_report() -> None:
    good = _native({"source": "agent", "tool_calls": [LOOK], "results": [{"call_id": "c1", "content": "x"}]})
    odd = _native({"source": "agent", "tool_calls": [LOOK]}, ENV_RESULT)
    result = import_payload(json.dumps([good, odd]))
    assert [e["problems"] for e in result.report["episodes"]] == [
        [],
        ["steps[1].results[0]: answers call id 'c1', which this step's assistant turn did not make"],
    ]
    assert result.report["not_chat_exportable"] == 1 and len(result.records) == 2


def test_the_openai_export_refuses_a_record_with_no_valid_chat_rendering() -> None:
    from lab.ingest import ConversationError, conversation_problems, export_openai

    user_calls = _native({"source": "user", "tool_calls": [LOOK], "results": [{"call_id": "c1", "content": "x"}]})
    assert conversation_problems(user_calls["steps"]) == [
        "steps[0].tool_calls: a user step makes tool calls; only assistant turns can",
        "steps[0].results[0]: answers call id 'c1', which this step's assistant turn did not make",
    ]
    twice = _native(
        {"source": "agent", "tool_calls": [LOOK], "results": [{"call_id": "c1", "content": "a"}, {"call_id": "c1", "content": "b"}]}
    )
    assert conversation_problems(twice["steps"]) == ["steps[0].results[1]: answers call id 'c1' a second time"]
    for record in (user_calls, twice, _native({"source": "agent", "tool_calls": [LOOK]}, ENV_RESULT)):
        with pytest.raises(ConversationError):
            export_openai(record)
