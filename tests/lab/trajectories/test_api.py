"""REST API v1 on episodes: upload, idempotency, list/filter, steps, exports, import jobs."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lab.trajectories.models import Episode, ImportJob, Step

pytestmark = pytest.mark.django_db


def post_json(client: Any, url: str, payload: Any, **headers: Any) -> Any:
    return client.post(url, data=json.dumps(payload), content_type="application/json", **headers)


def test_it_stores_an_uploaded_record_and_returns_the_same_episode_for_the_same_content(alice_api: Any, record_factory: Any) -> None:
    record = record_factory(steps=4)
    first = post_json(alice_api, "/api/v1/episodes/", record)
    assert first.status_code == 201, first.json()
    [stored] = first.json()["episodes"]
    assert stored["created"] is True
    again = post_json(alice_api, "/api/v1/episodes/", record)
    assert again.status_code == 200
    assert again.json()["episodes"][0] == {**stored, "created": False}
    assert Episode.objects.count() == 1 and Step.objects.count() == 4


def test_omitted_and_empty_optional_fields_hash_the_same(alice_api: Any, record_factory: Any) -> None:
    record = record_factory(steps=2)
    sparse = json.loads(json.dumps(record))
    for step in sparse["steps"]:
        for key in ("reasoning", "events", "state_hash", "token_ids", "logprobs", "latency_ms", "sim_time_start", "sim_time_end"):
            step.pop(key)
    a = post_json(alice_api, "/api/v1/episodes/", record).json()["episodes"][0]["id"]
    b = post_json(alice_api, "/api/v1/episodes/", sparse).json()["episodes"][0]["id"]
    assert a == b


def test_a_bulk_list_is_stored_in_one_request(alice_api: Any, record_factory: Any) -> None:
    records = [record_factory(steps=2, seed=s) for s in range(5)]
    response = post_json(alice_api, "/api/v1/episodes/", records)
    assert response.status_code == 201
    assert [e["created"] for e in response.json()["episodes"]] == [True] * 5
    assert Episode.objects.count() == 5 and Step.objects.count() == 10


def test_the_idempotency_key_replays_the_first_answer_and_refuses_a_different_body(alice_api: Any, record_factory: Any) -> None:
    first = post_json(alice_api, "/api/v1/episodes/", record_factory(seed=1), HTTP_IDEMPOTENCY_KEY="upload-42")
    replay = post_json(alice_api, "/api/v1/episodes/", record_factory(seed=1), HTTP_IDEMPOTENCY_KEY="upload-42")
    assert replay.status_code == first.status_code == 201
    assert replay.json() == first.json() and replay["Idempotent-Replayed"] == "true"
    other = post_json(alice_api, "/api/v1/episodes/", record_factory(seed=2), HTTP_IDEMPOTENCY_KEY="upload-42")
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
    assert Episode.objects.count() == 1


def test_list_filters_and_cursor_pagination(alice_api: Any, record_factory: Any) -> None:
    for seed in range(6):
        score = {"composite": seed / 10, "passed": seed >= 3, "components": {}}
        post_json(
            alice_api,
            "/api/v1/episodes/",
            record_factory(seed=seed, task="t-even" if seed % 2 == 0 else "t-odd", score=score, tag="needle" if seed == 4 else ""),
        )
    page = alice_api.get("/api/v1/episodes/?limit=4").json()
    assert len(page["results"]) == 4 and page["next"]
    rest = alice_api.get(page["next"]).json()
    assert len(rest["results"]) == 2 and rest["next"] is None
    seeds = lambda query: sorted(e["seed"] for e in alice_api.get(f"/api/v1/episodes/?{query}").json()["results"])  # noqa: E731
    assert seeds("passed=true") == [3, 4, 5]
    assert seeds("score_min=0.2&score_max=0.4") == [2, 3, 4]
    assert seeds("task=toyenv/t-even") == [0, 2, 4]
    assert seeds("q=needle") == [4]
    assert seeds("agent=test-agent&env=toyenv&source=upload") == [0, 1, 2, 3, 4, 5]
    bad = alice_api.get("/api/v1/episodes/?score_min=high")
    assert bad.status_code == 400 and "score_min" in bad.json()["error"]["message"]


def test_detail_steps_are_paginated(alice_api: Any, record_factory: Any) -> None:
    episode_id = post_json(alice_api, "/api/v1/episodes/", record_factory(steps=7)).json()["episodes"][0]["id"]
    detail = alice_api.get(f"/api/v1/episodes/{episode_id}/").json()
    assert detail["step_count"] == 7 and detail["env"] == "toyenv" and detail["agent"] == "test-agent"
    page = alice_api.get(f"/api/v1/episodes/{episode_id}/steps/?offset=5&limit=5").json()
    assert [s["index"] for s in page["steps"]] == [5, 6] and page["next_offset"] is None
    assert page["steps"][0]["results"][0]["content"] == {"value": 10}


def test_native_export_then_import_is_identical(alice_api: Any, record_factory: Any) -> None:
    record = record_factory(steps=3)
    record["steps"][1]["token_ids"] = [5, 6, 7]
    record["steps"][1]["logprobs"] = [-0.5, -0.25, -1.0]
    record["steps"][2]["timestamp"] = "2026-11-30T10:00:00Z"
    episode_id = post_json(alice_api, "/api/v1/episodes/", record).json()["episodes"][0]["id"]
    exported = alice_api.get(f"/api/v1/episodes/{episode_id}/export?format=native").json()
    assert exported["header"] == record["header"]
    assert exported["steps"][1]["token_ids"] == [5, 6, 7] and exported["steps"][2]["timestamp"] == "2026-11-30T10:00:00Z"
    again = post_json(alice_api, "/api/v1/episodes/", exported).json()["episodes"][0]
    assert again == {"id": episode_id, "created": False, "content_hash": again["content_hash"], "provenance": "upload"}
    assert alice_api.get(f"/api/v1/episodes/{episode_id}/export?format=native").json() == exported


def test_openai_export_and_streaming_dataset(alice_api: Any, record_factory: Any) -> None:
    episode_id = post_json(alice_api, "/api/v1/episodes/", record_factory(steps=2)).json()["episodes"][0]["id"]
    chat = alice_api.get(f"/api/v1/episodes/{episode_id}/export?format=openai").json()
    assistant = [m for m in chat["messages"] if m["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": json.dumps({"n": 0})}
    assert [m["role"] for m in chat["messages"]].count("tool") == 2
    response = alice_api.get("/api/v1/datasets/export?env=toyenv")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["messages"] == chat["messages"] and line["metadata"]["episode_id"] == episode_id


def test_secrets_are_redacted_at_ingest_and_counted(alice_api: Any, record_factory: Any) -> None:
    record = record_factory(steps=1)
    record["steps"][0]["message"] = "my key is sk-abcdefghijklmnopqrstuvwxyz123456 do not share"
    response = post_json(alice_api, "/api/v1/episodes/", record)
    assert response.json()["report"]["redactions"] == 1
    stored = Step.objects.get().message
    assert "sk-abcdef" not in stored and "[REDACTED" in stored


def _upload(client: Any, name: str, content: bytes, **params: str) -> Any:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.post(f"/api/v1/episodes/import/?{query}", {"file": SimpleUploadedFile(name, content)}, format="multipart")


OPENAI_CHAT = {
    "messages": [
        {"role": "system", "content": "You run a store."},
        {"role": "user", "content": "Restock the blue shirt."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "restock", "arguments": '{"sku": "BLUE-M", "qty": 5}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "ordered 5"},
        {"role": "assistant", "content": "Done."},
    ]
}


def test_an_uploaded_file_is_imported_by_a_real_celery_job(celery_worker: Any, alice_api: Any) -> None:
    lines = "\n".join(json.dumps({**OPENAI_CHAT, "metadata": {"n": i}}) for i in range(3)).encode()
    response = _upload(alice_api, "chats.jsonl", lines, format="auto")
    assert response.status_code == 202, response.json()
    job_url = response.json()["url"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        job = alice_api.get(job_url).json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.05)
    assert job["status"] == "done", job
    assert job["report"]["format"] == "openai" and job["report"]["created"] == 3
    episode = Episode.objects.get(pk=job["episode_ids"][0])
    assert episode.raw["messages"][2]["tool_calls"][0]["id"] == "call_1"  # the original payload is kept
    assert Step.objects.filter(episode=episode, source="agent").exists()


def test_import_wait_returns_the_finished_job(celery_worker: Any, alice_api: Any) -> None:
    response = _upload(alice_api, "chat.json", json.dumps(OPENAI_CHAT).encode(), wait="1")
    assert response.status_code == 201
    assert response.json()["status"] == "done" and len(response.json()["episode_ids"]) == 1
    assert ImportJob.objects.get().status == "finished"  # the API says "done", as before


def test_an_episode_with_no_valid_chat_is_refused_by_the_openai_exports(alice_api: Any, record_factory: Any) -> None:
    good = record_factory(steps=1)
    odd = record_factory(steps=1, tag="odd")
    odd["steps"].append({"index": 1, "source": "env", "results": [{"call_id": "c0", "content": "late"}]})
    stored = post_json(alice_api, "/api/v1/episodes/", [good, odd]).json()
    good_id, odd_id = (e["id"] for e in stored["episodes"])
    assert [e["problems"] for e in stored["report"]["episodes"]][1] == [
        "steps[1].results[0]: answers call id 'c0', which this step's assistant turn did not make"
    ]
    refused = alice_api.get(f"/api/v1/episodes/{odd_id}/export?format=openai")
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_conversation"
    assert refused.json()["error"]["problems"] == stored["report"]["episodes"][1]["problems"]
    assert alice_api.get(f"/api/v1/episodes/{odd_id}/export?format=native").status_code == 200  # kept whole
    lines = [json.loads(line) for line in b"".join(alice_api.get("/api/v1/datasets/export").streaming_content).splitlines()]
    assert [line["metadata"]["episode_id"] for line in lines[:-1]] == [good_id]
    assert lines[-1] == {"skipped": [{"episode_id": odd_id, "problems": stored["report"]["episodes"][1]["problems"]}]}
    native = [json.loads(line) for line in b"".join(alice_api.get("/api/v1/datasets/export?format=native").streaming_content).splitlines()]
    assert len(native) == 2


def test_a_task_with_episodes_is_not_deleted_and_answers_409_in_use(alice_api: Any, record_factory: Any) -> None:
    from lab.trajectories.models import Task

    assert post_json(alice_api, "/api/v1/episodes/", record_factory(steps=1)).status_code == 201
    task = Task.objects.get(key="toy-task")
    response = alice_api.delete(f"/api/v1/tasks/{task.pk}/")
    assert response.status_code == 409, response.json()
    assert response.json()["error"]["code"] == "in_use"
    assert Task.objects.filter(pk=task.pk).exists() and Episode.objects.count() == 1


def test_an_unused_task_is_deleted(alice_api: Any, project_a: Any) -> None:
    from lab.trajectories.models import Task

    task = Task.objects.create(project=project_a, env="toyenv", key="unused")
    assert alice_api.delete(f"/api/v1/tasks/{task.pk}/").status_code == 204
    assert not Task.objects.filter(pk=task.pk).exists()
