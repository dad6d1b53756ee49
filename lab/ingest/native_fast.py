"""The fast path for uploads of native records: msgspec reads, type-checks and completes them in C.

    records = read_native(data, filename="body.json", redactor=redactor, max_records=10_000)
    # [(record, origin), ...] exactly as the general path would return them, or None

None means "not for this path": the general pipeline (documents -> units -> native.to_record ->
validate_record) then reads the upload and names any problem. So this path only ever answers for uploads
the general one accepts, and answers with the same records: anything unusual (a key the schema does not
know, a secret to redact, a number Python's json reads differently, deep nesting, a failed check) sends
the upload back. On the ingest benchmark (`benchmarks/ingest.py`, 20,000 steps) it decodes, checks and
completes the records in 0.05 s, where orjson, the format reader and validate_record took 0.10 s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from environments.trajectory import HEADER_SCHEMA, MAX_DEPTH, SCHEMA_VERSION, header_errors
from lab.ingest.documents import nesting_depth
from lab.ingest.redaction import Redactor

Number = int | float  # both kept as written: 1 stays an int, 1.0 a float, as the hash sees them


class _ToolCall(Struct, forbid_unknown_fields=True):
    id: str
    name: Annotated[str, Meta(min_length=1)]
    arguments: dict[str, Any] | str


class _Result(Struct, forbid_unknown_fields=True):
    call_id: str
    content: Any
    is_error: bool | UnsetType = UNSET


class _Step(Struct, forbid_unknown_fields=True):
    """STEP_SCHEMA, field for field. The defaults are make_step's; an UNSET field is left out, as it was."""

    index: Annotated[int, Meta(ge=0)]
    source: Literal["agent", "user", "env", "human", "system"]
    message: Any = None
    reasoning: str | None = None
    tool_calls: list[_ToolCall] = []
    results: list[_Result] = []
    reward: Number | None = None
    sim_time_start: Number | None = None
    sim_time_end: Number | None = None
    events: list[dict[str, Any]] = []
    state_hash: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[Number] | None = None
    latency_ms: Number | None = None
    prompt_token_ids: list[int] | None | UnsetType = UNSET
    timestamp: str | None | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = UNSET


class _Record(Struct, forbid_unknown_fields=True):
    schema_version: Literal["practicum.trajectory/1"]
    header: dict[str, Any]
    steps: list[_Step]


_DECODER = msgspec.json.Decoder(_Record | list[_Record])
_HEADER_KEYS = frozenset(HEADER_SCHEMA["properties"])
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")
_MAX_STEPS = 100_000  # validate_record's default, which the general path applies


def read_native(data: bytes, *, filename: str, redactor: Redactor, max_records: int) -> list[tuple[dict[str, Any], str]] | None:
    """(record, origin) per record, origin "[i]" in a list and "" for a lone record; or None (see above)."""
    if data[:4] == b"PK\x03\x04" or data[:3] == b"\xef\xbb\xbf" or filename.lower().endswith((".zip", ".eval", ".jsonl", ".ndjson")):
        return None
    # Integers beyond 64 bits and long fractions: the general path reads them with Python's json, exactly;
    # so does msgspec, but this keeps the two paths' numbers beyond doubt.
    if b"0" * 19 in data.translate(_DIGITS_AS_ZERO):
        return None
    try:
        value = _DECODER.decode(data)
    except msgspec.DecodeError:  # not JSON, NaN, a lone surrogate, a wrong type, an unknown key: the general path says which
        return None
    records = value if isinstance(value, list) else [value]
    if not records or len(records) > max_records or nesting_depth(data) > MAX_DEPTH:
        return None
    if redactor.may_hold_secrets(data.decode()):  # msgspec has checked the text is UTF-8
        return None  # the general path redacts and counts
    if not all(_passes_the_other_checks(record) for record in records):
        return None
    built: list[dict[str, Any]] = msgspec.to_builtins(records)
    if isinstance(value, list):
        return [(record, f"[{i}]") for i, record in enumerate(built)]
    return [(built[0], "")]


def _passes_the_other_checks(record: _Record) -> bool:
    """What validate_record checks beyond the types the decoder enforced: the header against its schema,
    step indexes 0..n-1 in order, and each result answering a call of its own step."""
    header = record.header
    if not header.keys() <= _HEADER_KEYS or len(record.steps) > _MAX_STEPS:
        return False
    if header_errors(header):
        return False
    for position, step in enumerate(record.steps):
        if step.index != position:
            return False
        if step.results and step.tool_calls and not {r.call_id for r in step.results} <= {c.id for c in step.tool_calls}:
            return False  # results without calls are allowed (an environment's own step), as validate_record allows them
    return True


assert SCHEMA_VERSION == "practicum.trajectory/1", "update _Record.schema_version with the schema"
