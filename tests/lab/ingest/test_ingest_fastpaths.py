"""The ingest fast paths give exactly what the slow paths give: same values, same refusals, same hashes, no missed secret."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from environments import trajectory
from environments.trajectory import content_hash, make_step, new_record, normalize_record, validate_record
from lab.ingest import IngestError, Redactor, import_payload
from lab.ingest.documents import has_long_digit_run, loads_fast, loads_strict, nesting_depth
from lab.ingest.formats import native
from lab.ingest.native_fast import read_native
from lab.ingest.pipeline import _read_native
from lab.ingest.reader import RecordContext
from lab.ingest.redaction import _DEFAULT_TEXT_CHECKS, _PYTHON_SPACES, _SECRET_KEY_TEXT_CHECKS

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_texts = st.text(alphabet=st.sampled_from(list('ab"\\[]{}:,é€😀\n\t\x7f ')), max_size=8)
_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | _texts
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4), max_leaves=30)


def _walk_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_walk_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_walk_depth, value), default=0)
    return 0


def _reference_hash(record: dict[str, Any]) -> str:
    header = {k: v for k, v in record.get("header", {}).items() if k != "ingest"}
    text = json.dumps({"header": header, "steps": record.get("steps", [])}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@FAST
@given(_json, st.booleans())
def test_the_fast_parser_reads_what_the_strict_parser_reads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    fast = loads_fast(text)
    if fast is not None:  # None hands the text to loads_strict (huge integers, long digit runs)
        assert fast[0] == value and repr(fast[0]) == repr(loads_strict(text))
        assert fast[1] == _walk_depth(value)
    assert nesting_depth(text.encode()) == _walk_depth(value)


@pytest.mark.parametrize(
    "text",
    ["[NaN]", '{"a": Infinity}', "[-Infinity]", "[1e999]", "[123456789012345678901]", '["\\ud800"]', "[1] [2]", '{"a": 1,}'],
)
def test_the_fast_parser_leaves_every_doubtful_text_to_the_strict_one(text: str) -> None:
    assert loads_fast(text) is None


def test_nesting_depth_counts_containers_not_brackets_inside_strings() -> None:
    assert nesting_depth(b'["[[[{", "\\"]]", {"k]": []}]') == 3
    assert nesting_depth(b"7") == 0
    assert nesting_depth(b"[" * 80 + b"]" * 80, limit=64) == 65


def test_nan_and_deep_nesting_are_still_refused_with_their_field_path() -> None:
    record = new_record(header={"env": "e", "task": "t", "source": "upload"}, steps=[make_step(index=0)])
    body = json.dumps([record, record]).replace('"message": null', '"message": NaN', 1)
    with pytest.raises(IngestError) as nan:
        import_payload(body)
    assert (nan.value.record_index, nan.value.path) == (0, "[0].steps[0].message")
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    record["steps"][0]["message"] = deep  # 40 deep: fine for a document, too deep for a record
    with pytest.raises(IngestError) as too_deep:
        import_payload(json.dumps(record))
    assert too_deep.value.path.startswith("steps[0].message[0]") and "deeper than 32" in too_deep.value.reason


_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e-5, 1e-7, 2.5e-5, 1e16, 1e-310, -0.0, 5e-324])


@FAST
@given(st.dictionaries(_texts, _json | _floats, max_size=5), st.lists(st.dictionaries(_texts, _json | _floats, max_size=5), max_size=3))
def test_the_content_hash_is_byte_identical_to_the_json_dumps_one(header: dict[str, Any], steps: list[Any]) -> None:
    record = {"header": header, "steps": steps}
    assert content_hash(record) == _reference_hash(record)


def test_the_content_hash_falls_back_for_what_orjson_writes_differently() -> None:
    import datetime
    import enum

    class Kind(enum.IntEnum):
        A = 1

    for odd in [1e-5, 3e-7, "é", "\x7f", 2**70, Kind.A, datetime.date(2024, 1, 2), {1: "int key"}, ("a", "tuple")]:
        record = {"header": {"x": odd}, "steps": [{"index": 0, "v": odd}]}
        assert content_hash(record) == _reference_hash(record), odd


_SECRET_PIECES = [
    "sk-" + "a1B2" * 6,
    "sk-ant-" + "x" * 24,
    "ghp_" + "A" * 36,
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890",
    "Bearer abcdefghijklmnop",
    "BEARER\tabcdefghijklmnop",
    "api_key=hunter2hunter2",
    "Password: s3cretvalue",
    "paſſword=hunter2hunter2",
    '{"token": "abcdefgh12345"}',
    "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
    "prk_" + "Ab1-" * 6,
    "redis://:hunter2@cache",
    "https://bob:p@ss@example.com/x",
    "DB_PASSWORD=hunter2hunter2",
    "Github-Token: abcdefgh1",
    '{"app_secret": "abcdefgh12345"}',
]
_BENIGN_PIECES = [
    "prk_",
    "://",
    "@",
    ":",
    "eos_token",
    "task-1",
    "sk-",
    "bearer",
    "token",
    "api",
    "é",
    "😀",
    "\\",
    '"',
    "\n",
    "secret",
    "key:",
    "AKIA",
    "x",
    " ",
]
_pieces_text = st.lists(st.sampled_from(_SECRET_PIECES + _BENIGN_PIECES * 3), max_size=4).map("".join)
_secret_keys = st.sampled_from(
    ["token", "API_KEY", "x-api-key", "Authorization", "password\n", "note", "tokens", "secret", "db_password", "eos_token", "x_token\n"]
)
_payload = st.recursive(
    _pieces_text | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_secret_keys | _pieces_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_payload, st.booleans())
def test_the_text_prescan_never_misses_what_the_walk_would_redact(value: Any, ascii_only: bool) -> None:
    redactor = Redactor()
    _, found = redactor.redact(value)
    if found:
        assert redactor.may_hold_secrets(json.dumps(value, ensure_ascii=ascii_only))


def test_the_text_prescan_passes_plain_trajectories_and_catches_escaped_secrets() -> None:
    redactor = Redactor()
    assert not redactor.may_hold_secrets(json.dumps({"message": "checking stock for SKU-001 in task-7", "events": [{"op": "read"}]}))
    escaped_slash = '{"args": "Bearer abc\\/defghijklmn"}'  # the JSON text breaks the token with a backslash; its value does not
    assert redactor.redact(json.loads(escaped_slash))[1] == 1 and redactor.may_hold_secrets(escaped_slash)
    assert redactor.may_hold_secrets('{"m": "sk-\\u0061' + "b" * 20 + '"}')
    assert redactor.may_hold_secrets('{"tok\\u0065n": "abcdefgh1"}')


def test_the_spaces_spelled_out_for_re2_are_pythons_whitespace() -> None:
    assert set(re.sub(r"\\(.)", r"\1", _PYTHON_SPACES, flags=re.DOTALL)) == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


_CHECK_TEXT = st.text(
    alphabet=st.sampled_from(
        [*"bearer tokenapi_keysecretpasswordauthorization:=\"'-_akiasia0123456789xoxbghpprk/@<>", "\v", "\xa0", "\u2003", "\x1c"]
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_CHECK_TEXT, min_size=1, max_size=3).map(" ".join))
def test_the_one_re2_search_matches_wherever_one_of_the_re_checks_does(text: str) -> None:
    checks = sorted({*_SECRET_KEY_TEXT_CHECKS, *(c for group in _DEFAULT_TEXT_CHECKS.values() for c in group)})
    lowered, ascii_insensitive = Redactor()._text_checks[0]
    assert bool(lowered.search(text)) == any(re.search(check, text) for check in checks)
    upper = text.upper()
    if upper.isascii():
        assert bool(ascii_insensitive.search(upper)) == any(re.search(check, upper.lower()) for check in checks)


def test_custom_patterns_are_prescanned_as_themselves_unless_they_look_outside_the_string() -> None:
    custom = Redactor([("ticket", r"TCK-[0-9]{6}")])
    assert not custom.may_hold_secrets('{"m": "TCK-12345"}') and custom.may_hold_secrets('{"m": "see TCK-123456"}')
    anchored = Redactor([("whole", r"^internal-[a-z]+$")])
    assert anchored.may_hold_secrets('{"m": "nothing here"}')  # cannot be decided from the text: the walk runs


def _mutations() -> st.SearchStrategy[tuple[str, Any]]:
    fields = [
        "index",
        "source",
        "reward",
        "events",
        "tool_calls",
        "results",
        "token_ids",
        "logprobs",
        "meta",
        "timestamp",
        "reasoning",
        "other",
    ]
    values = st.sampled_from([None, True, 1, -1, 2.5, "x", "", [], [{}], [1, 2], [1.5], [True], {}, {"id": "c0"}, "agent"])
    return st.tuples(st.sampled_from(fields), values)


@FAST
@given(st.lists(_mutations(), max_size=3), st.integers(0, 2))
def test_the_step_checks_agree_with_the_schema_walker(mutations: list[tuple[str, Any]], which: int) -> None:
    steps = [
        make_step(index=i, tool_calls=[{"id": f"c{i}", "name": "f", "arguments": {}}], results=[{"call_id": f"c{i}", "content": "ok"}])
        for i in range(3)
    ]
    for key, value in mutations:
        steps[which][key] = value
    record = new_record(header={"env": "e", "task": "t", "source": "upload"}, steps=steps)
    slow = trajectory._step_ok
    try:
        trajectory._step_ok = lambda step, position: False  # type: ignore[assignment]
        expected = validate_record(record)
    finally:
        trajectory._step_ok = slow
    assert validate_record(record) == expected


@FAST
@given(st.lists(_mutations(), max_size=3))
def test_native_steps_read_fast_equal_the_reader_path(mutations: list[tuple[str, Any]]) -> None:
    step: dict[str, Any] = {"index": 0, "source": "agent", "message": "hi"}
    for key, value in mutations:
        if key not in ("index", "source"):
            step[key] = value
    raw = {"schema_version": trajectory.SCHEMA_VERSION, "header": {"env": "e", "task": "t", "source": "upload"}, "steps": [step]}
    fast_ctx, slow_ctx = RecordContext(0), RecordContext(0)
    fast = native.to_record(raw, "", fast_ctx, {})
    keys = native._STEP_KEYS
    try:
        native._STEP_KEYS = frozenset()  # type: ignore[misc]
        slow = native.to_record(raw, "", slow_ctx, {})
    finally:
        native._STEP_KEYS = keys  # type: ignore[misc]
    assert fast == slow and fast_ctx.unmapped == slow_ctx.unmapped
    assert fast["steps"][0]["events"] is not native._STEP_TEMPLATE["events"]  # each step owns its default lists


def test_normalizing_a_complete_step_copies_it_unchanged() -> None:
    step = {**make_step(index=0, message="m"), "timestamp": "2024-01-01T00:00:00Z"}
    normalized = normalize_record({"header": {}, "steps": [step]})["steps"][0]
    assert normalized == step and normalized is not step
    assert math.isclose(len(normalized), len(step))


_HEADER_MUTATIONS = st.tuples(
    st.sampled_from(["seed", "env", "source", "score", "reward", "policy", "unknown_key", "parent"]),
    st.sampled_from([None, True, 3, 1.5, "", "upload", "x", {}, {"composite": 2}, {"composite": 0.5, "passed": True}, []]),
)


def _general_path_only(data: bytes) -> Any:
    from lab.ingest import pipeline

    fast = pipeline.read_native
    try:
        pipeline.read_native = lambda *args, **kwargs: None  # type: ignore[assignment]
        return import_payload(data, filename="body.json", format="native")
    finally:
        pipeline.read_native = fast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_mutations(), max_size=3),
    st.lists(_HEADER_MUTATIONS, max_size=2),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from(["", "extra", "call_extra", "orphan_result", "no_calls"]),
)
def test_the_native_fast_path_answers_only_as_the_general_path_would(
    mutations: list[tuple[str, Any]], header_mutations: list[tuple[str, Any]], which: int, as_list: bool, twist: str
) -> None:
    steps = [
        make_step(
            index=i, tool_calls=[{"id": f"c{i}", "name": "f", "arguments": {"n": i}}], results=[{"call_id": f"c{i}", "content": "ok"}]
        )
        for i in range(3)
    ]
    for step in steps:  # uploads leave out fields they do not use
        del step["token_ids"], step["latency_ms"]
    for key, value in mutations:
        steps[which][key] = value
    header: dict[str, Any] = {"env": "e", "task": "t", "source": "upload", "seed": 1}
    for key, value in header_mutations:
        header[key] = value
    record: dict[str, Any] = {"schema_version": trajectory.SCHEMA_VERSION, "header": header, "steps": steps}
    if twist == "extra":
        record["notes"] = "kept in raw only"
    elif twist == "call_extra":
        steps[which]["tool_calls"] = [{"id": "c", "name": "f", "arguments": "{}", "type": "function"}]
    elif twist == "orphan_result":
        steps[which]["results"] = [{"call_id": "nobody", "content": 1, "is_error": True}]
    elif twist == "no_calls":
        steps[which]["tool_calls"] = []
    data = json.dumps([record, record] if as_list else record).encode()
    try:
        expected = _general_path_only(data)
    except IngestError as error:
        assert _read_native(data, "body.json", Redactor(), 10) is None
        with pytest.raises(IngestError) as raised:
            import_payload(data, filename="body.json", format="native")
        assert str(raised.value) == str(error)
        return
    got = import_payload(data, filename="body.json", format="native")
    assert got.records == expected.records and got.report == expected.report
    assert [e.content_hash for e in got.episodes] == [e.content_hash for e in expected.episodes]
    upload = read_native(data, filename="body.json", redactor=Redactor(), max_records=10)
    if upload is not None and all(native.steps() is not None for native in upload):
        assert [native.content_hash(native.steps() or []) for native in upload] == [e.content_hash for e in expected.episodes]


def test_the_native_fast_path_reads_plain_uploads_and_leaves_the_rest() -> None:
    record = new_record(header={"env": "e", "task": "t", "source": "upload"}, steps=[make_step(index=0, message="hi")])
    redactor = Redactor()
    assert _read_native(json.dumps([record]).encode(), "b.json", redactor, 10) is not None
    secret = {**record, "steps": [make_step(index=0, message="Bearer abcdefghijklmnopq")]}
    for data, filename in [
        (json.dumps(secret).encode(), "b.json"),  # a secret to redact
        (json.dumps(record).encode(), "b.jsonl"),  # JSON Lines
        (json.dumps({**record, "header": {**record["header"], "seed": 10**20}}).encode(), "b.json"),  # a long integer
        (json.dumps([record] * 11).encode(), "b.json"),  # more records than allowed
        (b"\xef\xbb\xbf" + json.dumps(record).encode(), "b.json"),  # a byte-order mark
        (json.dumps({**record, "steps": [{**record["steps"][0], "index": 1}]}).encode(), "b.json"),  # out of order
        (json.dumps(record).encode().replace(b'"hi"', b'"\xff"'), "b.json"),  # not UTF-8, inside the steps
        (json.dumps(record).encode().replace(b'"hi"', b"[1,,2]"), "b.json"),  # not JSON, inside the steps
    ]:
        assert _read_native(data, filename, redactor, 10) is None


@FAST
@given(st.lists(_scalars | st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=1, max_size=6), _texts)
def test_the_fast_content_hash_is_the_general_one(numbers: list[Any], text: str) -> None:
    steps = [make_step(index=0, message=text, reward=None, tool_calls=[{"id": "c", "name": "f", "arguments": {"xs": numbers, text: 1e22}}])]
    data = json.dumps(new_record(header={"env": "e", "task": "t", "source": "upload", "metrics": {"m": numbers}}, steps=steps)).encode()
    if has_long_digit_run(data):
        return  # read_native leaves runs of 19 digits (a long integer, or a float such as 0.0007944992619392011) to the general path
    upload = read_native(data, filename="b.json", redactor=Redactor([]), max_records=1)
    assert upload is not None
    [native] = upload
    decoded = native.steps()
    assert decoded is not None and native.content_hash(decoded) == content_hash(native.as_dict(decoded)) == content_hash(json.loads(data))
