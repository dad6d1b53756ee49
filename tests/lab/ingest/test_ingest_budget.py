"""One byte budget per upload: zip bombs, nested archives and attachment bombs are refused (413 too_large)
without their expansion ever being built in memory."""

from __future__ import annotations

import io
import json
import struct
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from lab.ingest import IngestError, import_payload
from lab.ingest.budget import BudgetExceeded, ByteBudget
from lab.ingest.documents import read_documents
from lab.ingest.shared import SharedValues
from tests.lab.ingest.test_ingest_containers import zipped

MB = 1 << 20
CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def zeros_zip(name: str, size: int) -> bytes:
    """`size` zero bytes compressed into one member, written in chunks so the test never holds them whole."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, archive.open(name, "w", force_zip64=True) as member:
        chunk = b"0" * MB
        for _ in range(size // MB):
            member.write(chunk)
    return buffer.getvalue()


def peak_bytes(call: Callable[[], Any]) -> tuple[int, BaseException | None]:
    """Peak Python allocation while `call` runs, and what it raised."""
    tracemalloc.start()
    try:
        call()
    except Exception as error:  # the point is to inspect it after measuring
        raised: BaseException | None = error
    else:
        raised = None
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, raised


def inspect_log(attachment: str, references: int) -> dict[str, Any]:
    content = " ".join(["attachment://big"] * references)
    sample = {
        "id": 1,
        "epoch": 1,
        "target": "x",
        "messages": [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}],
        "attachments": {"big": attachment},
    }
    return {"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}, "samples": [sample]}


def test_a_budget_counts_spent_bytes_and_refuses_past_its_limit():
    budget = ByteBudget(100)
    budget.spend(60, what="a")
    assert (budget.spent, budget.left) == (60, 40)
    with pytest.raises(BudgetExceeded) as caught:
        budget.spend(41, what="zip member b.json", file="x.zip")
    assert caught.value.file == "x.zip" and "zip member b.json" in caught.value.reason and "100 bytes" in caught.value.reason
    assert budget.spent == 60  # a refused spend is not counted


def test_a_zip_bomb_answers_413_too_large_without_unpacking():
    bomb = zeros_zip("bomb.json", 200 * MB)
    assert len(bomb) < 1 * MB
    peak, raised = peak_bytes(lambda: import_payload(bomb, filename="bomb.zip", max_bytes=len(bomb) + 1024))
    assert isinstance(raised, IngestError)
    assert (raised.status, raised.code) == (413, "too_large")
    assert peak < 20 * MB  # far below the 200 MB the archive would unpack to


def test_a_nested_zip_bomb_spends_the_same_budget_as_its_parent():
    inner = zeros_zip("bomb.json", 64 * MB)
    outer = zipped({"a.json": json.dumps(CHAT).encode(), "inner.zip": inner})
    peak, raised = peak_bytes(lambda: import_payload(outer, filename="outer.zip", max_expanded_bytes=8 * MB))
    assert isinstance(raised, IngestError) and (raised.status, raised.code) == (413, "too_large")
    assert raised.file == "inner.zip" and raised.record_index == 1  # a.json's record was read first
    assert peak < 24 * MB


def test_members_at_every_level_count_against_one_budget():
    member = json.dumps(CHAT).encode()
    inner = zipped({"b.json": member})
    outer = zipped({"a.json": member, "inner.zip": inner})
    budget = ByteBudget(10 * MB)
    documents = list(read_documents(outer, filename="outer.zip", budget=budget))
    assert [d.file for d in documents] == ["a.json", "b.json"]
    assert budget.spent == 2 * len(member) + len(inner)  # the inner archive's own bytes and its member's
    with pytest.raises(BudgetExceeded):
        list(read_documents(outer, filename="outer.zip", budget=ByteBudget(2 * len(member) + len(inner) - 1)))


def test_a_zip_within_its_budget_imports():
    data = zipped({"a.json": json.dumps(CHAT).encode(), "inner.zip": zipped({"b.json": json.dumps(CHAT).encode()})})
    result = import_payload(data, filename="x.zip", max_expanded_bytes=1 * MB)
    assert [e.file for e in result.episodes] == ["a.json", "b.json"]


def test_an_attachment_referenced_thousands_of_times_answers_413_without_building_it():
    log = json.dumps(inspect_log("x" * MB, 5000)).encode()  # about 1 MB that would expand to 5 GB
    peak, raised = peak_bytes(lambda: import_payload(log, filename="log.json", max_bytes=len(log) + 1024))
    assert isinstance(raised, IngestError) and (raised.status, raised.code) == (413, "too_large")
    assert "attachment://" in raised.reason and raised.record_index == 0
    assert peak < 64 * MB  # the upload parsed a few times over, never the 5 GB expansion


def test_attachments_within_the_budget_are_expanded():
    log = inspect_log("y" * 1000, 3)
    log["plan"] = {"steps": [{"solver": "system_message", "params": {"template": "p" * 500}}]}  # stored once, counted once
    shared = SharedValues().factor(import_payload(json.dumps(log)).records[0]["header"])[2]
    assert shared > 500
    result = import_payload(json.dumps(log), max_expanded_bytes=3000 + shared)
    assert result.records[0]["steps"][0]["message"] == " ".join(["y" * 1000] * 3)
    with pytest.raises(IngestError) as caught:
        import_payload(json.dumps(log), max_expanded_bytes=2999 + shared)
    assert caught.value.code == "too_large"


def test_a_non_text_attachment_is_left_as_its_reference():
    log = inspect_log("unused", 1)
    log["samples"][0]["attachments"]["big"] = {"not": "text"}
    result = import_payload(json.dumps(log))
    assert result.records[0]["steps"][0]["message"] == "attachment://big"


def _patched(data: bytes, offsets: list[tuple[int, str, int]]) -> bytes:
    patched = bytearray(data)
    for offset, fmt, value in offsets:
        struct.pack_into(fmt, patched, offset, value)
    return bytes(patched)


def test_a_member_whose_header_understates_its_size_is_refused_as_damaged():
    data = zipped({"a.json": json.dumps({"messages": [{"role": "user", "content": "x" * 5000}]}).encode()})
    central = data.rfind(b"PK\x01\x02")
    lying = _patched(data, [(central + 24, "<I", 100), (22, "<I", 100)])  # uncompressed size, central and local headers
    with pytest.raises(IngestError) as caught:
        import_payload(lying, filename="x.zip")
    assert caught.value.status == 400 and caught.value.file == "a.json" and "cannot be unpacked" in caught.value.reason


def test_an_encrypted_member_is_refused_with_a_reason():
    data = zipped({"a.json": json.dumps(CHAT).encode()})
    central = data.rfind(b"PK\x01\x02")
    encrypted = _patched(data, [(central + 8, "<H", 1), (6, "<H", 1)])  # the "encrypted" flag bit
    with pytest.raises(IngestError) as caught:
        import_payload(encrypted, filename="x.zip")
    assert caught.value.status == 400 and "is encrypted" in caught.value.reason


# What the upload API passes (lab.trajectories.imports.parse_upload): the absolute limits are far above these bombs,
# so only the expansion ratio, counted as decoding streams, refuses them fast.
API_LIMITS = {"max_bytes": 64 * MB, "max_expanded_bytes": 256 * MB}


def refused_quickly(data: bytes, filename: str) -> IngestError:
    started = time.perf_counter()
    with pytest.raises(IngestError) as caught:
        import_payload(data, filename=filename, **API_LIMITS)
    assert time.perf_counter() - started < 5.0
    assert (caught.value.status, caught.value.code) == (413, "too_large")
    return caught.value


def test_a_small_nested_archive_of_records_is_refused_by_the_ratio_limit_in_seconds():
    record = json.dumps({"messages": [{"role": "user", "content": "a" * 30_000}, {"role": "assistant", "content": "ok"}]}) + "\n"
    inner = zipped({"run.jsonl": (record * 6_000).encode()})  # 180 MB of records: under the absolute limit
    outer = zipped({"inner.zip": inner})
    assert len(outer) < 2 * MB
    error = refused_quickly(outer, "outer.zip")
    assert "expansion ratio limit: 50 x" in error.reason and f"the {len(outer)} bytes uploaded" in error.reason


def test_one_attachment_referenced_150_times_is_refused_by_the_ratio_limit_in_seconds():
    log = json.dumps(inspect_log("x" * MB, 150)).encode()  # 1 MB uploaded, 150 MB expanded: within the absolute limit
    error = refused_quickly(log, "log.json")
    assert "attachment://" in error.reason and "expansion ratio limit" in error.reason


def tau2_results(policy_bytes: int, simulations: int) -> dict[str, Any]:
    info = {"environment_info": {"domain_name": "airline", "policy": "p" * policy_bytes}, "agent_info": {"implementation": "a", "llm": "m"}}
    sims = [
        {"id": f"s{i}", "task_id": "1", "trial": i, "termination_reason": "user_stop", "messages": [{"role": "user", "content": "hi"}]}
        for i in range(simulations)
    ]
    return {"timestamp": "t", "info": info, "tasks": [{"id": "1"}], "simulations": sims}


def test_shared_context_counts_against_the_budget_once_as_it_is_stored_once():
    # 50 KB of policy shared by 600 one-line simulations: the lab stores it once (lab.ingest.shared), so it is spent
    # once: 600 copies (30 MB) would not fit 60 KB, one does.
    data = json.dumps(tau2_results(50_000, 600)).encode()
    assert len(import_payload(data, max_expanded_bytes=60_000, max_expansion_ratio=0).records) == 600
    with pytest.raises(IngestError) as caught:
        import_payload(data, max_expanded_bytes=49_000, max_expansion_ratio=0)
    assert caught.value.code == "too_large" and caught.value.record_index == 0
    assert "the shared context (meta.run_info; stored once for all the episodes that hold it)" in caught.value.reason


def test_the_absolute_limit_still_applies_when_it_is_the_tighter_one():
    budget = ByteBudget(100, stored=10, ratio=50, floor=0)
    with pytest.raises(BudgetExceeded, match=r"more than 100 bytes \(the expansion limit"):
        budget.spend(101, what="x")
    tight = ByteBudget(1000, stored=10, ratio=5, floor=20)
    assert tight.cap == 50 and "5 x the 10 bytes uploaded" in tight.which
