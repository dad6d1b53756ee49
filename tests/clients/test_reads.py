"""Reading through practicum-client from a live server: keyset pages, steps, one episode, dataset exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from practicum_client import PracticumError
from tests.conftest import make_record


@pytest.fixture
def stored(connect: Any) -> list[int]:
    records = [make_record(steps=3, seed=i, task="lookup" if i % 2 else "search", tag=str(i)) for i in range(7)]
    return connect().episodes.upload(records).episode_ids


def test_iter_walks_every_page_newest_first_and_list_gives_one(connect: Any, stored: list[int]) -> None:
    client = connect()
    assert [e["id"] for e in client.episodes.iter(page_size=3)] == sorted(stored, reverse=True)
    assert [e["id"] for e in client.episodes.list(limit=2)] == sorted(stored, reverse=True)[:2]
    lookups = [e for e in client.episodes.iter(page_size=2, task="toyenv/lookup")]
    assert len(lookups) == 3 and {e["task"] for e in lookups} == {"lookup"}
    with pytest.raises(PracticumError) as unknown:
        client.episodes.list(colour="red")
    assert (unknown.value.status, unknown.value.code) == (400, "unknown_parameter")


def test_steps_come_back_whole_across_pages_and_export_as_records(connect: Any, stored: list[int]) -> None:
    client = connect()
    steps = client.episodes.steps(stored[0], page_size=2)
    assert [s["index"] for s in steps] == [0, 1, 2] and steps[2]["tool_calls"][0]["arguments"] == {"n": 2}
    assert client.episodes.export(stored[0])["header"]["seed"] == 0
    with pytest.raises(PracticumError) as missing:
        client.episodes.get(10**9)
    assert missing.value.status == 404


def test_a_dataset_export_is_streamed_to_the_file(connect: Any, stored: list[int], tmp_path: Path) -> None:
    exported = connect().datasets.export(tmp_path / "data.jsonl", format="native", task="toyenv/search")
    lines = [json.loads(line) for line in (tmp_path / "data.jsonl").read_text().splitlines()]
    assert exported.lines == len(lines) == 4 and exported.bytes == (tmp_path / "data.jsonl").stat().st_size
    assert {line["header"]["task"] for line in lines} == {"search"}
    assert not (tmp_path / "data.jsonl.partial").exists()
