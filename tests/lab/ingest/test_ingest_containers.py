"""Container shapes and auto-detection: JSON, lists, JSONL, zips (nested too), `.eval` archives."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from lab.ingest import IngestError, import_payload
from tests.lab.ingest.conftest import FIXTURES, TAUBENCH_FILE

DETECTED = [
    ("native_storebench.json", "native", 1),
    ("openai_chat.jsonl", "openai", 2),
    ("atif_session.json", "atif", 1),
    (TAUBENCH_FILE, "taubench", 3),
    ("tau2_airline_results.json", "tau2", 2),
    ("inspect_ctf_log.json", "inspect", 2),
    ("inspect_ctf_log.eval", "inspect", 2),
    ("sharegpt_tools.json", "sharegpt", 2),
]


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(("name", "fmt", "count"), DETECTED)
def test_auto_detection_finds_each_format(name, fmt, count):
    data = (FIXTURES / name).read_bytes()
    detected = import_payload(data, filename="")  # by shape alone, not by file name
    assert (detected.format, len(detected.records)) == (fmt, count)
    explicit = import_payload(data, format=fmt)
    assert explicit.records == detected.records


def test_a_zip_of_every_fixture_imports_all_of_them_as_mixed():
    files = {f"uploads/{name}": (FIXTURES / name).read_bytes() for name, _, _ in DETECTED}
    files["uploads/README.txt"] = b"not a trajectory"
    result = import_payload(zipped(files), filename="batch.zip")
    assert result.format == "mixed" and len(result.records) == sum(count for _, _, count in DETECTED)
    assert result.report["formats"] == sorted({fmt for _, fmt, _ in DETECTED})
    assert result.report["skipped_files"] == ["uploads/README.txt"]
    by_file = {e.file for e in result.episodes}
    assert "samples/1_epoch_1.json" in by_file and f"uploads/{TAUBENCH_FILE}" in by_file
    # the tau-bench run configuration still comes from the member's file name
    taubench = next(e for e in result.episodes if e.format == "taubench")
    assert taubench.record["header"]["policy"]["name"] == "tool-calling"


def test_single_object_list_and_jsonl_give_the_same_records():
    lines = (FIXTURES / "openai_chat.jsonl").read_text().splitlines()
    objects = [json.loads(line) for line in lines]
    as_jsonl = import_payload("\n".join(lines) + "\n")
    as_list = import_payload(json.dumps(objects))
    singles = [import_payload(json.dumps(o)).records[0] for o in objects]
    assert as_jsonl.records == as_list.records == singles
    assert [e.origin for e in as_list.episodes] == ["[0]", "[1]"]


def test_a_bare_message_list_is_one_conversation():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    result = import_payload(json.dumps(messages))
    assert result.format == "openai" and [s["source"] for s in result.records[0]["steps"]] == ["user", "agent"]


def test_a_zip_bomb_header_is_refused_before_unpacking():
    data = zipped({"big.json": b" " * 5_000_000})
    with pytest.raises(IngestError) as caught:
        import_payload(data, filename="x.zip", max_bytes=100_000)
    assert caught.value.status == 413 and "unpacks to" in caught.value.reason


def test_unmapped_fields_are_reported_with_paths():
    chat = {"messages": [{"role": "user", "content": "x", "x_trace": {"span": 1}}], "tools": [], "experiment": "e7"}
    result = import_payload(json.dumps(chat))
    assert result.episodes[0].unmapped == ["messages[0].x_trace", "experiment"]
    assert result.report["unmapped_summary"] == {"messages[].x_trace": 1, "experiment": 1}
    assert result.episodes[0].raw == chat  # kept whole
