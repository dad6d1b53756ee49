"""Bad uploads: each raises IngestError naming the record index, the field path and the reason."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from environments.trajectory import make_step, new_record
from lab.errors import DomainError
from lab.ingest import IngestError, import_payload


def native(steps=None, **header):
    base = {"env": "storebench", "task": "supplier-collapse", "source": "upload"}
    return new_record(header={**base, **header}, steps=steps if steps is not None else [make_step(index=0, source="env", message="Day 1")])


def lines(*records) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


GOOD_CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}

# (case, payload, options, record_index, path, reason fragment, status)
BAD_UPLOADS = [
    ("not json", b"{not json", {}, 0, "", "not valid JSON", 400),
    ("not utf-8", b"\xff\xfe\x00{", {}, 0, "", "not UTF-8", 400),
    ("empty file", b"   \n", {}, 0, "", "empty", 400),
    ("empty list", b"[]", {}, 0, "", "no records", 400),
    ("unknown format name", json.dumps(GOOD_CHAT).encode(), {"format": "csv"}, 0, "format", "unknown format 'csv'", 400),
    ("unrecognised shape", b'{"hello": "world"}', {}, 0, "", "unrecognised format", 400),
    ("unrecognised list element", json.dumps([GOOD_CHAT, {"x": 1}]).encode(), {}, 1, "[1]", "unrecognised format", 400),
    ("bad JSONL line", lines(GOOD_CHAT, GOOD_CHAT) + b"\n{oops", {}, 2, "", "line 3: not valid JSON", 400),
    ("NaN", b'{"messages": [{"role": "user", "content": "x"}], "reward": NaN}', {}, 0, "reward", "NaN is not a finite number", 400),
    (
        "Infinity in second record",
        lines(GOOD_CHAT, {**GOOD_CHAT, "reward": 1}).replace(b'"reward": 1', b'"reward": -Infinity'),
        {},
        1,
        "reward",
        "-Infinity",
        400,
    ),
    ("overflowing float", b'[{"messages": [], "reward": 1e999}]', {}, 0, "[0].reward", "1e999 is not a finite number", 400),
    ("absurd nesting", b"[" * 100_000 + b"]" * 100_000, {}, 0, "", "nested too deep", 400),
    (
        "deep nesting",
        json.dumps({"messages": [{"role": "user", "content": "x", "metadata": json.loads("[" * 80 + "]" * 80)}]}).encode(),
        {},
        0,
        "messages[0].metadata" + "[0]" * 62,
        "nested deeper than 64",
        400,
    ),
    ("wrong type: messages", b'{"messages": "hello"}', {"format": "openai"}, 0, "messages", "expected array, got string", 400),
    (
        "wrong type: content",
        json.dumps({"messages": [{"role": "user", "content": 5}]}).encode(),
        {},
        0,
        "messages[0].content",
        "expected string or array or null",
        400,
    ),
    ("missing role", json.dumps({"messages": [{"content": "x"}]}).encode(), {}, 0, "messages[0].role", "required field is missing", 400),
    (
        "unknown role",
        json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(),
        {},
        0,
        "messages[0].role",
        "unknown role 'robot'",
        400,
    ),
    (
        "empty tool name",
        json.dumps(
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "", "arguments": "{}"}}]}
                ]
            }
        ).encode(),
        {},
        0,
        "messages[0].tool_calls[0].function.name",
        "must not be empty",
        400,
    ),
    (
        "native missing header field",
        json.dumps(native()).replace('"task": "supplier-collapse", ', "").encode(),
        {},
        0,
        "header.task",
        "required field is missing",
        400,
    ),
    (
        "native missing steps",
        json.dumps({k: v for k, v in native().items() if k != "steps"}).encode(),
        {},
        0,
        "steps",
        "required field is missing",
        400,
    ),
    (
        "native wrong version",
        json.dumps({**native(), "schema_version": "practicum.trajectory/9"}).encode(),
        {},
        0,
        "schema_version",
        "unsupported version",
        400,
    ),
    (
        "native steps out of order",
        json.dumps([native(), native([make_step(index=0), make_step(index=2)])]).encode(),
        {},
        1,
        "[1].steps[1].index",
        "step index 2 is out of order",
        400,
    ),
    (
        "native steps duplicated",
        lines(native([make_step(index=0), make_step(index=0)])),
        {},
        0,
        "steps[1].index",
        "step index 0 is duplicated",
        400,
    ),
    (
        "native wrong step type",
        json.dumps(native([{"index": "0", "source": "agent"}])).encode(),
        {},
        0,
        "steps[0].index",
        "expected integer, got string",
        400,
    ),
    (
        "native bad source",
        json.dumps(native([make_step(index=0, source="robot")])).encode(),
        {},
        0,
        "steps[0].source",
        "'robot' is not one of",
        400,
    ),
    (
        "native score out of range",
        json.dumps(native(score={"composite": 1.5, "passed": True})).encode(),
        {},
        0,
        "header.score.composite",
        "above the maximum",
        400,
    ),
    (
        "result answering no call",
        json.dumps(
            native([make_step(index=0, tool_calls=[{"id": "a", "name": "t", "arguments": {}}], results=[{"call_id": "b", "content": 1}])])
        ).encode(),
        {},
        0,
        "steps[0].results[0].call_id",
        "answers no tool call",
        400,
    ),
    (
        "atif steps out of order",
        json.dumps(
            {"schema_version": "ATIF-v1.4", "session_id": "s", "agent": {"name": "a"}, "steps": [{"step_id": 2, "source": "user"}]}
        ).encode(),
        {},
        0,
        "steps[0].step_id",
        "out of order",
        400,
    ),
    (
        "taubench missing reward",
        json.dumps([{"task_id": 1, "traj": [], "trial": 0}]).encode(),
        {},
        0,
        "[0].reward",
        "required field is missing",
        400,
    ),
    (
        "tau2 missing task id",
        json.dumps({"info": {}, "tasks": [], "simulations": [{"messages": []}]}).encode(),
        {},
        0,
        "simulations[0].task_id",
        "required field is missing",
        400,
    ),
    (
        "inspect sample without id",
        json.dumps({"eval": {"task": "t"}, "samples": [{"id": 1, "epoch": 1, "messages": []}, {"epoch": 1, "messages": []}]}).encode(),
        {},
        1,
        "samples[1].id",
        "required",
        400,
    ),
    (
        "sharegpt unknown speaker",
        json.dumps({"conversations": [{"from": "narrator", "value": "x"}]}).encode(),
        {},
        0,
        "conversations[0].from",
        "unknown speaker",
        400,
    ),
    (
        "explicit format mismatch",
        json.dumps(GOOD_CHAT).encode(),
        {"format": "sharegpt"},
        0,
        "conversations",
        "required field is missing",
        400,
    ),
    ("too many records", lines(*[GOOD_CHAT] * 4), {"max_records": 3}, 3, "", "too many records", 413),
    ("too many bytes", json.dumps(GOOD_CHAT).encode(), {"max_bytes": 10}, 0, "", "at most 10 allowed", 413),
    ("not a zip", b"PK\x03\x04garbage", {}, 0, "", "not a readable zip", 400),
    ("bad member in zip", zipped({"a.jsonl": lines(GOOD_CHAT), "b.json": b"{nope"}), {"filename": "x.zip"}, 1, "", "not valid JSON", 400),
]


@pytest.mark.parametrize(
    ("payload", "options", "index", "path", "reason", "status"), [case[1:] for case in BAD_UPLOADS], ids=[case[0] for case in BAD_UPLOADS]
)
def test_it_refuses_bad_uploads_naming_record_path_and_reason(payload, options, index, path, reason, status):
    with pytest.raises(IngestError) as caught:
        import_payload(payload, **options)
    error = caught.value
    assert (error.record_index, error.path, error.status) == (index, path, status), error.message
    assert reason in error.reason
    assert error.as_json()["error"]["record_index"] == index and error.as_json()["error"]["path"] == path


def test_a_bad_record_after_good_ones_fails_the_whole_upload():
    with pytest.raises(IngestError) as caught:
        import_payload(lines(GOOD_CHAT, GOOD_CHAT, {"messages": [{"role": "user", "content": 1}]}))
    assert caught.value.record_index == 2 and caught.value.path == "messages[0].content"


def test_zip_member_errors_name_the_member():
    with pytest.raises(IngestError) as caught:
        import_payload(
            zipped({"good.json": json.dumps(GOOD_CHAT).encode(), "nested/bad.jsonl": b'{"conversations": [{"from": "x", "value": "y"}]}'}),
            filename="u.zip",
        )
    assert caught.value.file == "nested/bad.jsonl" and caught.value.record_index == 1
    assert "nested/bad.jsonl" in caught.value.message


def test_a_refused_upload_is_a_domain_error_with_its_code_status_and_details():
    with pytest.raises(DomainError) as caught:
        import_payload(json.dumps(GOOD_CHAT).encode(), max_bytes=10)
    error = caught.value
    assert isinstance(error, IngestError)
    assert (error.code, error.status) == ("invalid_upload", 413)
    body = error.as_json()["error"]
    assert body["code"] == "invalid_upload" and body["record_index"] == 0 and body["path"] == ""
    assert body["message"] == error.message and "at most 10 allowed" in body["reason"]


def test_a_bad_zip_member_names_its_file_in_the_error_body():
    with pytest.raises(DomainError) as caught:
        import_payload(zipped({"a.jsonl": lines(GOOD_CHAT), "b.json": b"{nope"}), filename="x.zip")
    body = caught.value.as_json()["error"]
    assert (body["code"], body["file"], body["record_index"]) == ("invalid_upload", "b.json", 1)
