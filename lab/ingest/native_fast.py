"""The fast path for uploads of native records: msgspec reads, type-checks and completes them in C.

    upload = read_native(data, filename="body.json", redactor=redactor, max_records=10_000)
    if upload is not None:                      # None: "not for this path", see below
        for record in upload:                   # NativeRecord: header and origin read, steps not yet
            steps = record.steps()              # list[NativeStep], or None when a check fails
            record.content_hash(steps), record.as_dict(steps)

None (from read_native or NativeRecord.steps) means the upload goes to the general pipeline (documents ->
units -> native.to_record -> validate_record), which then reads it and names any problem. So this path only
ever answers for uploads the general one accepts, and answers with the same records and hashes: anything
unusual (a key the schema does not know, a secret to redact, a number Python's json reads differently, deep
nesting, a failed check) sends the upload back. Steps are decoded record by record so that a caller storing
them can overlap that work with the database's (lab.trajectories.services.episodes_ingest_native).
On the ingest benchmark (20,000 steps) decoding, checking and completing take 0.05 s, where orjson, the
format reader and validate_record took 0.10 s.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

import msgspec
import re2
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from environments.records import Record
from environments.roles import ROLE_NAME
from environments.trajectory import HEADER_SCHEMA, MAX_DEPTH, MAX_STEPS, SCHEMA_VERSION, content_hash, header_errors
from lab.ingest.documents import has_long_digit_run, nesting_depth, unstorable_escape
from lab.ingest.export import ASSISTANT_SOURCES
from lab.ingest.redaction import Redactor

_ROLE_PATTERN = f"^(?:{ROLE_NAME.pattern})\\Z"  # msgspec searches: anchored at both ends
Number = int | float  # both kept as written: 1 stays an int, 1.0 a float, as the hash sees them


class NativeToolCall(Struct, forbid_unknown_fields=True):
    id: str
    name: Annotated[str, Meta(min_length=1)]
    arguments: dict[str, Any] | str


class NativeResult(Struct, forbid_unknown_fields=True):
    call_id: str
    content: Any
    is_error: bool | UnsetType = UNSET


class NativeStep(Struct, forbid_unknown_fields=True):
    """STEP_SCHEMA, field for field, written out for the type checker and the reader; the defaults are
    STEP_DEFAULTS, and an UNSET field is left out, as it was. tests/lab/trajectories/test_step_shape.py checks
    that the two agree, types included."""

    index: Annotated[int, Meta(ge=0)]
    source: Literal["agent", "user", "env", "human", "system"]
    message: Any = None
    reasoning: str | None = None
    tool_calls: list[NativeToolCall] = []
    results: list[NativeResult] = []
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
    # A role name (environments.roles.ROLE_NAME), which the lab's column holds; anything else goes to the
    # general path, which names it (lab.trajectories.services._prepare).
    role: Annotated[str, Meta(pattern=_ROLE_PATTERN)] | UnsetType = UNSET


class _RecordHead(Struct, forbid_unknown_fields=True):
    schema_version: Literal["practicum.trajectory/1"]
    header: dict[str, Any]
    steps: Raw  # kept as text until NativeRecord.steps()


_HEAD_DECODER = msgspec.json.Decoder(_RecordHead | list[_RecordHead])
_STEPS_DECODER = msgspec.json.Decoder(list[NativeStep])
_HASH_ENCODER = msgspec.json.Encoder(order="sorted")
_HEADER_KEYS = frozenset(HEADER_SCHEMA["properties"])
# Where msgspec writes a number otherwise than json.dumps: "1e22" for "1e+22", "1e-7" for "1e-07", "0.00001" for
# "1e-05" (checked over 600,000 random doubles: nowhere else). A number follows ":", "," or "[" in compact JSON;
# text that merely looks so ("x:1e3") sends the hash to the general computation too, which is exact. RE2 scans
# this five times faster than `re`, whose search tries the class at every position.
_NOT_AS_JSON_DUMPS = re2.compile(rb"[:,\[]-?[0-9]+(?:\.[0-9]+)?e|[:,\[]-?0\.0000")


@dataclass
class NativeRecord:
    header: dict[str, Any]
    origin: str  # "[i]" in a list, "" for a lone record: where the general path's report puts it
    steps_json: Raw

    def steps(self) -> list[NativeStep] | None:
        """The steps, decoded and checked; None when the general path must judge them."""
        try:
            steps = _STEPS_DECODER.decode(self.steps_json)
        except (msgspec.DecodeError, RecursionError):
            return None
        return steps if _steps_pass(steps) else None

    def as_dict(self, steps: list[NativeStep]) -> Record:
        """The record as native.to_record would build it: every step field present, UNSET ones left out."""
        built: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "header": self.header, "steps": msgspec.to_builtins(steps)}
        return cast(Record, built)  # NativeRecord and NativeStep decode the record's schema

    def content_hash(self, steps: list[NativeStep]) -> str:
        """trajectory.content_hash of as_dict(steps), without building it when msgspec writes the same bytes."""
        header = {k: v for k, v in self.header.items() if k != "ingest"}
        canonical = _HASH_ENCODER.encode({"header": header, "steps": steps})
        if canonical.isascii() and b"\x7f" not in canonical and not _NOT_AS_JSON_DUMPS.search(canonical):
            return hashlib.sha256(canonical).hexdigest()
        return content_hash(self.as_dict(steps))


def read_native(data: bytes, *, filename: str, redactor: Redactor, max_records: int) -> list[NativeRecord] | None:
    """The upload's records with their headers read and checked, or None (see the module's docstring)."""
    if data[:4] == b"PK\x03\x04" or data[:3] == b"\xef\xbb\xbf" or filename.lower().endswith((".zip", ".eval", ".jsonl", ".ndjson")):
        return None
    # Integers beyond 64 bits and long fractions: the general path reads them with Python's json, exactly;
    # so does msgspec, but this keeps the two paths' numbers beyond doubt.
    if has_long_digit_run(data):
        return None
    if nesting_depth(data) > MAX_DEPTH:  # before decoding: msgspec's own limit is a RecursionError, far deeper
        return None
    try:
        value = _HEAD_DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):  # not JSON, NaN, a lone surrogate, a wrong type, an unknown key
        return None
    heads = value if isinstance(value, list) else [value]
    if not heads or len(heads) > max_records:
        return None
    if any(not head.header.keys() <= _HEADER_KEYS or header_errors(head.header) for head in heads):
        return None
    try:
        text = data.decode()  # the steps, kept raw, have not been read yet: their bytes may not be UTF-8
    except UnicodeDecodeError:
        return None
    if redactor.may_hold_secrets(text) or unstorable_escape(text):
        return None  # the general path redacts and counts, or names the unstorable string
    if isinstance(value, list):
        return [NativeRecord(head.header, f"[{i}]", head.steps) for i, head in enumerate(heads)]
    return [NativeRecord(heads[0].header, "", heads[0].steps)]


def _steps_pass(steps: list[NativeStep]) -> bool:
    """What validate_record checks beyond the types the decoder enforced: at most MAX_STEPS steps, indexes
    0..n-1 in order, and each result answering a call of its own step when the step made calls; and that the
    record has no chat-export problems (lab.ingest.export.conversation_problems), which only the general path reports."""
    if len(steps) > MAX_STEPS:
        return False
    for position, step in enumerate(steps):
        if step.index != position:
            return False
        if step.results and step.tool_calls and not {r.call_id for r in step.results} <= {c.id for c in step.tool_calls}:
            return False  # results without calls are allowed (an environment's own step), as validate_record allows them
        if (step.tool_calls or step.results) and not _chat_exportable(step):
            return False  # stored all the same, by the general path, which names the problems in the report
    return True


def _chat_exportable(step: NativeStep) -> bool:
    """The fast form of export.conversation_problems for one step that makes calls or holds results."""
    call_ids = {c.id for c in step.tool_calls}
    return (
        step.source in ASSISTANT_SOURCES
        and len(call_ids) == len(step.tool_calls)
        and len({r.call_id for r in step.results}) == len(step.results)
        and all(r.call_id in call_ids for r in step.results)
    )


assert SCHEMA_VERSION == "practicum.trajectory/1", "update _RecordHead.schema_version with the schema"
