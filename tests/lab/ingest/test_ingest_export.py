"""Exporters: native -> export -> import is the identity; OpenAI export survives an OpenAI re-import."""

from __future__ import annotations

import json

from environments.trajectory import make_step, new_record
from lab.ingest import export_native, export_openai, import_payload
from tests.lab.ingest.conftest import FIXTURES, TAUBENCH_FILE


def storebench_record() -> dict:
    return json.loads((FIXTURES / "native_storebench.json").read_text())


def test_native_export_then_import_is_identical():
    record = export_native(import_payload((FIXTURES / "native_storebench.json").read_bytes()).records[0])
    again = import_payload(json.dumps(export_native(record)).encode()).records[0]
    assert again == record
    assert export_native(again) == record


def test_native_round_trip_of_a_record_built_with_make_step():
    record = new_record(
        header={
            "env": "storebench",
            "task": "t",
            "source": "branch",
            "parent": {"episode_id": 41, "branch_step": 2},
            "seed": 9,
            "meta": {"note": "x"},
        },
        steps=[
            make_step(index=0, source="env", message="start"),
            make_step(
                index=1,
                tool_calls=[{"id": "c1", "name": "wait", "arguments": "{broken"}],
                results=[{"call_id": "c1", "content": None, "is_error": True}],
                token_ids=[1, 2],
            ),
            make_step(index=2, source="human", message=[{"type": "text", "text": "done"}], meta={"ui": "play"}),
        ],
    )
    assert import_payload(json.dumps(export_native(record)).encode()).records == [record]


def test_export_native_fills_missing_step_fields_and_copies_deeply():
    record = storebench_record()
    exported = export_native(record)
    assert exported["steps"][3]["results"] == [] and exported["steps"][3]["latency_ms"] is None
    exported["header"]["policy"]["name"] = "changed"
    assert record["header"]["policy"]["name"] == "qwen3-0.6b-sft"


def test_openai_export_shape():
    chat = export_openai(storebench_record())
    assert chat["tools"][1]["function"]["name"] == "place_order"
    roles = [m["role"] for m in chat["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    first_call = chat["messages"][1]
    assert first_call["reasoning_content"] == "Check the fast-moving SKU before ordering."
    assert first_call["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "check_inventory", "arguments": '{"sku": "MILK-1L"}'}}
    ]
    assert chat["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"daily_demand": 30, "on_hand": 14, "sku": "MILK-1L"}',
    }
    assert chat["messages"][-1] == {"role": "assistant", "content": "Switched supply to Borealis; stock covers demand from day 3."}


def test_openai_export_reimports_with_the_same_messages_and_tool_calls():
    for name in (
        "native_storebench.json",
        "openai_chat.jsonl",
        TAUBENCH_FILE,
        "tau2_airline_results.json",
        "inspect_ctf_log.json",
        "atif_session.json",
        "sharegpt_tools.json",
    ):
        for record in import_payload((FIXTURES / name).read_bytes(), filename=name).records:
            chat = export_openai(record)
            reimported = import_payload(json.dumps(chat).encode(), format="openai").records[0]
            assert export_openai(reimported) == chat, name
            original_calls = [(c["id"], c["name"], c["arguments"]) for s in record["steps"] for c in s["tool_calls"]]
            assert [(c["id"], c["name"], c["arguments"]) for s in reimported["steps"] for c in s["tool_calls"]] == original_calls, name


def test_openai_import_then_export_gives_back_the_conversation():
    line = json.loads((FIXTURES / "openai_chat.jsonl").read_text().splitlines()[0])
    chat = export_openai(import_payload(json.dumps(line).encode()).records[0])
    assert chat["tools"] == line["tools"]
    assert [m["role"] for m in chat["messages"]] == [m["role"] for m in line["messages"]]
    assert chat["messages"][2]["tool_calls"][0]["function"] == {"name": "get_order_details", "arguments": '{"order_id": "#W2378156"}'}
    assert chat["messages"][3] == line["messages"][3]


def test_a_user_slot_turn_exports_as_the_user_without_its_private_note() -> None:
    steps = [
        make_step(index=0, source="env", message="Help the customer."),
        make_step(index=1, source="agent", message="How can I help?"),
        make_step(index=2, source="human", role="user", message="My booking.", reasoning="I will not say the date yet"),
        make_step(index=3, source="user", role="user", message="BK-1.", reasoning="model note"),
    ]
    messages = export_openai(new_record(header={"env": "x", "task": "t", "source": "rollout"}, steps=steps))["messages"]
    assert messages[2:] == [{"role": "user", "content": "My booking."}, {"role": "user", "content": "BK-1."}]
