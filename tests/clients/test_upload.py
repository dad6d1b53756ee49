"""Uploads through practicum-client to a live server: batches, retries, idempotency, resuming, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.trajectories.models import Episode, IdempotencyRecord
from practicum_client import PracticumError
from practicum_client.episodes import Progress
from tests.clients.network import Killed, Network
from tests.conftest import make_record


def _records(n: int, tag: str = "") -> list[dict[str, Any]]:
    return [make_record(seed=i, tag=f"{tag}{i}") for i in range(n)]


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_batch_whose_answer_was_lost_is_retried_and_replayed_not_stored_twice(connect: Any) -> None:
    network = Network(lose={2})
    result = connect(network).episodes.upload(_records(5), batch_size=2)
    assert (len(network.posts), result.batches_sent, result.replayed) == (4, 3, 1)  # batch 2 sent twice, answered once
    assert network.posts[1].headers["Idempotency-Key"] == network.posts[2].headers["Idempotency-Key"]
    assert (result.created, result.already_stored) == (5, 0)
    assert sorted(result.episode_ids) == sorted(Episode.objects.values_list("pk", flat=True)) and len(set(result.episode_ids)) == 5
    assert IdempotencyRecord.objects.count() == 3


def test_an_interrupted_file_upload_resumes_from_the_last_acknowledged_batch(connect: Any, tmp_path: Path) -> None:
    file = _jsonl(tmp_path / "big.jsonl", _records(10))
    states = tmp_path / "state"
    seen: list[Progress] = []
    with pytest.raises(Killed):  # batch 3 is stored, then the process dies before hearing so
        connect(Network(kill={3})).episodes.upload(file, batch_size=2, state_folder=states, progress=seen.append)
    assert [p.episodes for p in seen] == [2, 4] and len(list(states.iterdir())) == 1
    assert Episode.objects.count() == 6

    network = Network()
    result = connect(network).episodes.upload(file, batch_size=2, state_folder=states)
    assert (result.batches_skipped, result.batches_sent, result.replayed) == (2, 3, 1)  # 3 again (replayed), then 4 and 5
    assert len(network.posts) == 3
    assert sorted(result.episode_ids) == sorted(Episode.objects.values_list("pk", flat=True)) and len(result.episode_ids) == 10
    assert result.created == 10  # the first run's 4 and the 2 it never heard about are counted once
    assert list(states.iterdir()) == []  # done: nothing left to resume


def test_a_changed_file_or_restart_starts_over_under_new_keys(connect: Any, tmp_path: Path) -> None:
    file = _jsonl(tmp_path / "a.jsonl", _records(4))
    states = tmp_path / "state"
    with pytest.raises(Killed):
        connect(Network(kill={1})).episodes.upload(file, batch_size=2, state_folder=states)
    network = Network()
    result = connect(network).episodes.upload(file, batch_size=2, state_folder=states, resume=False)
    assert (result.batches_skipped, result.batches_sent, result.replayed) == (0, 2, 0)
    assert (result.created, result.already_stored) == (2, 2)  # content already stored is found, not stored again
    assert Episode.objects.count() == 4


def test_429_is_waited_out_and_the_batch_sent_again(connect: Any) -> None:
    network = Network(refuse={1, 2})
    result = connect(network).episodes.upload(_records(2))
    assert (len(network.posts), result.created) == (3, 2)


def test_a_refusal_raises_the_servers_code_and_message(connect: Any, role_users: dict[str, Any], key_for: Any, project_a: Any) -> None:
    broken = _records(2)
    broken[1]["steps"][0]["tool_calls"] = "not a list"
    with pytest.raises(PracticumError) as refused:
        connect().episodes.upload(broken)
    assert refused.value.status == 400 and "[1]" in refused.value.message + json.dumps(refused.value.details)
    assert Episode.objects.count() == 0
    with pytest.raises(PracticumError) as forbidden:
        connect(key=key_for(role_users["viewer"], project_a)).episodes.upload(_records(1))
    assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")
    with pytest.raises(PracticumError) as bad_format:
        connect().episodes.upload(_records(1), format="csv")
    assert bad_format.value.code == "unknown_format"


def test_a_foreign_format_file_is_imported_by_the_server_job(connect: Any, celery_worker: Any, tmp_path: Path) -> None:
    chats = [
        {"messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]} for i in range(3)
    ]
    result = connect().episodes.upload(_jsonl(tmp_path / "chats.jsonl", chats), batch_size=2, state_folder=tmp_path)
    assert (result.batches_sent, result.created, len(result.episode_ids)) == (2, 3, 3)
    assert set(Episode.objects.values_list("provenance", flat=True)) == {"upload"}
