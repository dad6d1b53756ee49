"""The one history-truncation rule (training/context.py): oldest turns go first, whole, behind one marker note."""

from __future__ import annotations

from typing import Any

from training.context import omission_note, omitted_count, split_turns, truncate_messages


def _conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "TASK"}]
    for i in range(turns):
        messages += [{"role": "assistant", "content": f"call {i}"}, {"role": "tool", "content": f"result {i}"}]
    return messages


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_a_conversation_that_fits_is_returned_untouched() -> None:
    messages = _conversation(3)
    assert truncate_messages(messages, fits=lambda m: True) == (messages, 0)


def test_the_oldest_turns_go_first_and_a_note_counts_them() -> None:
    messages = _conversation(6)
    out, omitted = truncate_messages(messages, fits=lambda m: len(m) <= 9, summary="cash $5")  # head, note, 3 turns
    assert omitted == 3 and len(out) == 9
    assert out[:2] == messages[:2]  # the system prompt and the task are never dropped
    assert (
        out[2]
        == omission_note(3, "cash $5")
        == {"role": "user", "content": "[3 earlier turns are omitted to fit the context window.] Current state: cash $5"}
    )
    assert omitted_count(out[2]) == 3
    assert [m["content"] for m in out if m["role"] == "assistant"] == ["call 3", "call 4", "call 5"]


def test_a_turn_is_never_cut_in_half() -> None:
    out, omitted = truncate_messages(_conversation(10), fits=lambda m: _chars(m) <= 110)  # the note alone is 57 characters
    assert omitted == 7 and omitted_count(out[2]) == omitted and _chars(out) <= 110
    roles = [m["role"] for m in out[3:]]
    assert roles == ["assistant", "tool"] * (len(roles) // 2)


def test_a_note_already_there_is_counted_again_not_stacked() -> None:
    first, omitted = truncate_messages(_conversation(8), fits=lambda m: len(m) <= 9)
    more = first + [{"role": "assistant", "content": "call 8"}, {"role": "tool", "content": "result 8"}]
    second, total = truncate_messages(more, fits=lambda m: len(m) <= 9)
    notes = [m for m in second if omitted_count(m) is not None]
    assert len(notes) == 1 and total == omitted + 1 == omitted_count(notes[0])


def test_the_newest_turn_is_kept_even_when_it_alone_does_not_fit() -> None:
    out, omitted = truncate_messages(_conversation(4), fits=lambda m: False)
    assert omitted == 3 and [m["content"] for m in out if m["role"] == "assistant"] == ["call 3"]


def test_max_turns_caps_the_window_whatever_fits() -> None:
    out, omitted = truncate_messages(_conversation(5), fits=lambda m: True, max_turns=2)
    assert omitted == 3 and len(split_turns(out)[2]) == 2
