"""Every kind of bad upload answers a clear 4xx naming what is wrong, and stores nothing."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lab.trajectories.models import Episode, ImportJob, SharedContext, Step, Task

pytestmark = pytest.mark.django_db


def _record() -> dict[str, Any]:
    return {
        "schema_version": "practicum.trajectory/1",
        "header": {"env": "toyenv", "task": "t", "source": "upload", "seed": 1},
        "steps": [
            {
                "index": 0,
                "source": "agent",
                "tool_calls": [{"id": "a", "name": "look", "arguments": {}}],
                "results": [{"call_id": "a", "content": "x"}],
            },
            {"index": 1, "source": "agent", "message": "done"},
        ],
    }


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"x": value}
    return value


def _with(path: str, value: Any) -> dict[str, Any]:
    record = _record()
    target: Any = record
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if value is _DELETE:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return record


_DELETE = object()


def _bulk_one_bad() -> list[dict[str, Any]]:
    good = _record()
    bad = _with("steps.1.index", 5)
    other = _record()
    other["header"]["seed"] = 2
    return [good, other, bad]


# (name, raw body, expected status, text the message must contain, expected record index or None)
CASES: list[tuple[str, bytes, int, str, int | None]] = [
    ("not json", b"{this is not json", 400, "JSON", None),
    ("empty body", b"", 400, "", None),
    ("a bare number", b"42", 400, "", None),
    ("header missing", json.dumps(_with("header", _DELETE)).encode(), 400, "header", 0),
    ("env missing", json.dumps(_with("header.env", _DELETE)).encode(), 400, "header.env", 0),
    ("seed is text", json.dumps(_with("header.seed", "seven")).encode(), 400, "header.seed", 0),
    ("steps not a list", json.dumps(_with("steps", {"0": {}})).encode(), 400, "steps", 0),
    ("unknown source", json.dumps(_with("header.source", "dream")).encode(), 400, "header.source", 0),
    ("step source wrong", json.dumps(_with("steps.0.source", "robot")).encode(), 400, "steps[0].source", 0),
    ("tool name not text", json.dumps(_with("steps.0.tool_calls.0.name", 3)).encode(), 400, "steps[0].tool_calls[0].name", 0),
    ("steps out of order", json.dumps(_with("steps.1.index", 5)).encode(), 400, "out of order", 0),
    ("steps duplicated", json.dumps(_with("steps.1.index", 0)).encode(), 400, "duplicated", 0),
    ("NaN reward", json.dumps(_with("steps.0.reward", float("nan"))).encode(), 400, "steps[0].reward", 0),
    ("Infinity reward", json.dumps(_with("steps.1.reward", float("inf"))).encode(), 400, "steps[1].reward", 0),
    ("composite above 1", json.dumps(_with("header.score", {"composite": 3.0, "passed": True})).encode(), 400, "header.score.composite", 0),
    ("absurd nesting", json.dumps(_with("steps.0.results.0.content", _nested(200))).encode(), 400, "nest", 0),
    ("deep nesting past the parser", b"[" * 100_000 + b"]" * 100_000, 400, "", None),
    ("result for no call", json.dumps(_with("steps.0.results.0.call_id", "zzz")).encode(), 400, "call_id", 0),
    ("bad date", json.dumps(_with("header.started_at", "yesterday")).encode(), 400, "header.started_at", 0),
    ("one bad record in a bulk list", json.dumps(_bulk_one_bad()).encode(), 400, "out of order", 2),
    (
        "nesting past msgspec's limit",
        json.dumps(_with("steps.1.message", "XX")).encode().replace(b'"XX"', b"[" * 5000 + b"]" * 5000),
        400,
        "",
        None,
    ),
    ("not UTF-8 inside a step", json.dumps(_with("steps.1.message", "XX")).encode().replace(b"XX", b"\xff\xfe"), 400, "UTF-8", None),
    ("not JSON inside a step", json.dumps(_with("steps.1.message", "XX")).encode().replace(b'"XX"', b"[1,,2]"), 400, "JSON", None),
]


@pytest.mark.parametrize(("name", "body", "status", "needle", "index"), CASES, ids=[c[0] for c in CASES])
def test_bad_episode_uploads_are_refused_and_store_nothing(
    alice_api: Any, name: str, body: bytes, status: int, needle: str, index: int | None
) -> None:
    response = alice_api.post("/api/v1/episodes/", data=body, content_type="application/json")
    assert response.status_code == status, (name, response.content[:300])
    error = response.json()["error"]
    assert needle in error["message"], error
    if index is not None:
        assert error["record_index"] == index
        assert error["path"]
    assert Episode.objects.count() == 0 and Step.objects.count() == 0 and Task.objects.count() == 0


def test_unknown_format_is_refused(alice_api: Any) -> None:
    response = alice_api.post("/api/v1/episodes/import/?format=yaml", {"file": SimpleUploadedFile("a.json", b"{}")}, format="multipart")
    assert response.status_code == 400 and "yaml" in response.json()["error"]["message"]
    assert ImportJob.objects.count() == 0


def test_a_file_in_no_known_shape_is_refused(alice_api: Any) -> None:
    response = alice_api.post("/api/v1/episodes/import/", {"file": SimpleUploadedFile("a.json", b'{"hello": "world"}')}, format="multipart")
    assert response.status_code == 400, response.json()
    assert ImportJob.objects.count() == 0 and Episode.objects.count() == 0


def test_a_file_without_the_file_field_is_refused(alice_api: Any) -> None:
    response = alice_api.post("/api/v1/episodes/import/", {"other": "x"}, format="multipart")
    assert response.status_code == 400 and "file" in response.json()["error"]["message"]


def test_over_the_size_limit_answers_413(alice_api: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_UPLOAD_BYTES = 2048
    big = json.dumps(_with("steps.1.message", "x" * 4000)).encode()
    assert alice_api.post("/api/v1/episodes/", data=big, content_type="application/json").status_code == 413
    upload = alice_api.post("/api/v1/episodes/import/", {"file": SimpleUploadedFile("big.json", big)}, format="multipart")
    assert upload.status_code == 413
    assert Episode.objects.count() == 0 and ImportJob.objects.count() == 0


def test_too_many_records_is_refused(alice_api: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD = 2
    records = []
    for seed in range(3):
        record = _record()
        record["header"]["seed"] = seed
        records.append(record)
    response = alice_api.post("/api/v1/episodes/", data=json.dumps(records), content_type="application/json")
    assert response.status_code in (400, 413) and Episode.objects.count() == 0


def test_a_parent_in_another_project_is_kept_as_a_claim_and_never_linked(alice_api: Any, api: Any, bob: Any, project_b: Any) -> None:
    # Uploads cannot be branches: the reference is kept in meta as the sender's claim, and no episode is linked.
    bob_api = api(bob, project_b)
    bob_episode = bob_api.post("/api/v1/episodes/", data=json.dumps(_record()), content_type="application/json").json()["episodes"][0]["id"]
    child = _with("header.source", "branch")
    child["header"]["parent"] = {"episode_id": bob_episode, "branch_step": 0}
    response = alice_api.post("/api/v1/episodes/", data=json.dumps(child), content_type="application/json")
    assert response.status_code == 201
    stored = Episode.objects.get(pk=response.json()["episodes"][0]["id"])
    assert (stored.parent_id, stored.branch_step, stored.source, stored.provenance) == (None, None, "upload", "upload")
    assert stored.meta["claimed_parent"] == {"episode_id": bob_episode, "branch_step": 0} and stored.meta["claimed_source"] == "branch"


def test_a_zip_bomb_upload_answers_413_too_large_and_stores_nothing(alice_api: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_EXPANDED_BYTES = 4 * 1024 * 1024
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("bomb.json", "w") as member:
        for _ in range(16):
            member.write(b" " * (1 << 20))
    upload = SimpleUploadedFile("bomb.zip", buffer.getvalue())
    response = alice_api.post("/api/v1/episodes/import/", {"file": upload}, format="multipart")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert Episode.objects.count() == 0 and ImportJob.objects.count() == 0


def test_shared_context_past_the_budget_even_once_answers_413_and_stores_nothing(alice_api: Any, settings: Any) -> None:
    # A policy shared by 200 simulations is stored (and counted) once: the upload is refused only when one copy is
    # already past the budget.
    from tests.lab.ingest.test_ingest_budget import tau2_results

    settings.PRACTICUM_MAX_EXPANDED_BYTES, settings.PRACTICUM_MAX_EXPANSION_RATIO = 40_000, 0
    upload = SimpleUploadedFile("results.json", json.dumps(tau2_results(50_000, 200)).encode())
    response = alice_api.post("/api/v1/episodes/import/", {"file": upload}, format="multipart")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert "the shared context (meta.run_info; stored once" in response.json()["error"]["message"]
    assert Episode.objects.count() == 0 and ImportJob.objects.count() == 0 and SharedContext.objects.count() == 0
