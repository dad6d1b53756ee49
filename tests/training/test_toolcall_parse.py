from __future__ import annotations

from environments.core import ToolCall
from training.toolcall_parse import parse_tool_calls, render_tool_call


def test_it_parses_calls_and_keeps_the_message():
    text = 'Looking.<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call><tool_call>{"name": "answer", "arguments": "{\\"color\\": \\"red\\"}"}</tool_call>'
    parsed = parse_tool_calls(text)
    assert parsed.error is None and parsed.message == "Looking."
    assert parsed.tool_calls == [ToolCall("lookup", {"item": "lamp"}, "call_0"), ToolCall("answer", {"color": "red"}, "call_1")]


def test_malformed_output_is_an_error_not_an_exception():
    assert "not valid JSON" in parse_tool_calls("<tool_call>{name: lookup}</tool_call>").error
    assert "never closed" in parse_tool_calls('ok <tool_call>{"name": "a"').error
    assert "non-empty string 'name'" in parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>').error
    assert "must be a JSON object" in parse_tool_calls('<tool_call>{"name": "a", "arguments": [1]}</tool_call>').error
    assert parse_tool_calls("just text").tool_calls == []


def test_render_and_parse_round_trip():
    text = render_tool_call("restock", {"sku": "A-1", "quantity": 3})
    assert parse_tool_calls(text).tool_calls == [ToolCall("restock", {"sku": "A-1", "quantity": 3}, "call_0")]
