"""The PostgreSQL COPY rows (lab.trajectories.bulk) hold what the ORM path stores for the same step."""

from __future__ import annotations

import json

from environments.trajectory import make_step
from lab.trajectories.bulk import STEP_COPY_COLUMNS, copy_row, copy_value, step_row

_JSON_COLUMNS = {"message", "tool_calls", "results", "events", "token_ids", "logprobs", "extra"}


def _as_stored(value: object, column: str) -> object:
    return json.loads(value) if column in _JSON_COLUMNS and value is not None else value  # type: ignore[arg-type]


def test_a_copy_row_holds_what_the_orm_row_stores() -> None:
    calls = [{"id": "c1", "name": "get_inventory", "arguments": {"sku": "SKU-1", "n": 2**70}}]
    for step in [
        make_step(index=3, message="héllo", tool_calls=calls, results=[{"call_id": "c1", "content": {"x": 1e-7}}], reward=0.5),
        {**make_step(index=0, message=None), "timestamp": "2024-01-01T00:00:00Z", "meta": {"k": [1, 2]}, "token_ids": [1, 2]},
        {"index": 1, "source": "user", "tool_calls": None, "events": None},  # a partial row, as episode_append_step never sends
    ]:
        row = step_row(7, step)
        copied = copy_row(7, step)
        assert [_as_stored(v, c) for v, c in zip(copied, STEP_COPY_COLUMNS, strict=True)] == [row[c] for c in STEP_COPY_COLUMNS]
        assert copy_row(7, row, extra=row["extra"]) == copied


def test_message_token_ids_and_logprobs_keep_sql_null_while_lists_hold_empty_arrays() -> None:
    copied = dict(zip(STEP_COPY_COLUMNS, copy_row(1, make_step(index=0)), strict=True))
    assert copied["message"] is None and copied["token_ids"] is None and copied["logprobs"] is None
    assert (copied["tool_calls"], copied["results"], copied["events"], copied["extra"]) == ("[]", "[]", "[]", "{}")
    assert copy_value(2**70) == str(2**70)  # beyond orjson's 64 bits: json.dumps writes it


def test_a_native_copy_row_holds_what_the_dict_copy_row_holds() -> None:
    import msgspec

    from lab.ingest.native_fast import NativeStep
    from lab.trajectories.bulk import native_copy_row

    calls = [{"id": "c1", "name": "get_inventory", "arguments": {"sku": "SKU-1", "n": 3}}]
    for step in [
        make_step(
            index=3, message="héllo", tool_calls=calls, results=[{"call_id": "c1", "content": {"x": 1e-7}, "is_error": False}], reward=1
        ),
        {**make_step(index=0, message=[{"type": "text", "text": "hi"}]), "timestamp": "2024-01-01T00:00:00Z", "meta": {"k": [1]}},
        {**make_step(index=1, source="env"), "token_ids": [1, 2], "logprobs": [-0.5, 0], "prompt_token_ids": None, "latency_ms": 12.5},
    ]:
        native = msgspec.json.decode(json.dumps(step), type=NativeStep)
        expected = [_as_stored(v, c) for v, c in zip(copy_row(7, step), STEP_COPY_COLUMNS, strict=True)]
        assert [_as_stored(v, c) for v, c in zip(native_copy_row(7, native), STEP_COPY_COLUMNS, strict=True)] == expected
