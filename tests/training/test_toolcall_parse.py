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


def test_it_parses_a_list_of_calls_in_one_block():
    parsed = parse_tool_calls(
        '<tool_call>[{"name": "lookup", "arguments": {"item": "lamp"}}, {"name": "answer", "arguments": {}}]</tool_call>'
    )
    assert parsed.error is None
    assert [(c.name, c.arguments, c.id) for c in parsed.tool_calls] == [("lookup", {"item": "lamp"}, "call_0"), ("answer", {}, "call_1")]


def test_a_list_with_a_bad_item_keeps_the_good_ones_and_says_why():
    parsed = parse_tool_calls('<tool_call>[{"name": "lookup", "arguments": {"item": "lamp"}}, 7, []]</tool_call>')
    assert [c.name for c in parsed.tool_calls] == ["lookup"]
    assert parsed.error is not None and "must be a JSON object" in parsed.error


def test_an_empty_list_or_an_unclosed_block_is_an_invalid_call():
    assert parse_tool_calls("<tool_call>[]</tool_call>").error is not None
    unclosed = parse_tool_calls('<tool_call>{"name": "lookup", "arguments": {"item": "la')  # ran out of tokens
    assert unclosed.tool_calls == [] and "never closed" in (unclosed.error or "")
