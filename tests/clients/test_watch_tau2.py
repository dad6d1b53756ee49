"""`practicum watch tau2`: a results file that tau2-bench rewrites after every simulation, uploaded a simulation at a
time to a live server: each once, complete files only, refusals remembered, nothing re-sent after a restart."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from lab.trajectories.models import Episode
from practicum_client.cli import main
from practicum_client.harnesses import Tau2Results
from practicum_client.watch import Watcher
from tests.clients.network import Network

FIXTURE = Path(__file__).parents[1] / "lab" / "ingest" / "fixtures" / "tau2_airline_results.json"


@pytest.fixture
def results() -> dict[str, Any]:
    data = json.loads(FIXTURE.read_text())
    assert [s["id"] for s in data["simulations"]] == ["sim-1c2d3e", "sim-9f8e7d"]
    return data


def _write(path: Path, value: Any, *, tick: int = 0) -> None:
    """Write as tau2 does (the whole file again), dated `tick` seconds after a fixed past time: each write a new version."""
    path.write_text(json.dumps(value, indent=2) if not isinstance(value, str) else value)
    when = (int(time.time()) - 1000 + tick) * 10**9
    os.utime(path, ns=(when, when))


class Away(Network):
    """A server that cannot be reached."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "results").mkdir()
    return tmp_path / "results"


def _task_keys() -> list[str]:
    return sorted(Episode.objects.values_list("task__key", flat=True))


def test_each_simulation_is_uploaded_once_as_the_file_grows(
    connect: Any, celery_worker: Any, results: dict[str, Any], tmp_path: Path
) -> None:
    watched = tmp_path / "simulations"
    watched.mkdir()
    file = watched / "run.json"
    state = tmp_path / "state.json"
    network = Network()
    watcher = Watcher(connect(network), watched, Tau2Results(), settle_s=0, state_file=state)

    _write(file, json.dumps({**results, "simulations": results["simulations"][:1]})[:-200])  # caught mid-rewrite
    assert [(h.file, h.outcome) for h in watcher.pass_once()] == [("run.json", "waiting")] and network.posts == []

    _write(file, {**results, "simulations": results["simulations"][:1]}, tick=1)
    [first] = watcher.pass_once()
    assert (first.outcome, len(first.episode_ids)) == ("uploaded", 1) and _task_keys() == ["0"]

    _write(file, results, tick=2)  # tau2 appended the second simulation
    [second] = watcher.pass_once()
    assert (second.outcome, len(second.episode_ids)) == ("uploaded", 1) and _task_keys() == ["0", "7"]
    assert Episode.objects.get(pk=second.episode_ids[0]).task.key == "7"  # only the new simulation was sent

    assert watcher.pass_once() == [] and len(network.posts) == 2
    _write(file, results, tick=3)  # rewritten with nothing new
    assert [(h.outcome, h.episode_ids) for h in watcher.pass_once()] == [("unchanged", [])] and len(network.posts) == 2
    restarted = Network()
    assert Watcher(connect(restarted), watched, Tau2Results(), settle_s=0, state_file=state).pass_once() == []
    assert restarted.posts == [] and Episode.objects.count() == 2


def test_a_refused_file_is_remembered_until_it_changes_and_foreign_json_is_left_alone(
    connect: Any, celery_worker: Any, results: dict[str, Any], tmp_path: Path
) -> None:
    broken = json.loads(json.dumps(results))
    broken["simulations"][0]["messages"] = "not a list"
    watched = _folder(tmp_path)
    _write(watched / "broken.json", broken)
    _write(watched / "notes.json", {"about": "not a results file"})
    network = Network()
    watcher = Watcher(connect(network), watched, Tau2Results(), settle_s=0, state_file=tmp_path / "state" / "s.json")
    outcomes = {h.file: h for h in watcher.pass_once()}
    assert outcomes["notes.json"].outcome == "unchanged"
    assert outcomes["broken.json"].outcome == "refused" and "messages" in outcomes["broken.json"].error
    assert len(network.posts) == 1 and Episode.objects.count() == 0
    assert watcher.pass_once() == [] and len(network.posts) == 1  # not retried while the file is the same

    _write(watched / "broken.json", results, tick=1)  # fixed
    [fixed] = watcher.pass_once()
    assert (fixed.outcome, len(fixed.episode_ids)) == ("uploaded", 2) and _task_keys() == ["0", "7"]


def test_a_file_still_settling_waits_and_an_unreachable_server_is_tried_again(
    connect: Any, results: dict[str, Any], tmp_path: Path
) -> None:
    watched = _folder(tmp_path)
    (watched / "run.json").write_text(json.dumps(results))  # just now
    watcher = Watcher(connect(), watched, Tau2Results(), settle_s=60, state_file=tmp_path / "s.json")
    assert [h.outcome for h in watcher.pass_once()] == ["waiting"]

    away = Watcher(connect(Away()), watched, Tau2Results(), settle_s=0, state_file=tmp_path / "s.json")
    [unsent] = away.pass_once()
    assert unsent.outcome == "unreachable" and "connection refused" in unsent.error
    assert [h.outcome for h in away.pass_once()] == ["unreachable"]  # nothing was recorded: the next pass tries again


def test_watch_once_from_the_shell(
    live_server: Any,
    server_key: str,
    celery_worker: Any,
    results: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PRACTICUM_STATE_DIR", str(tmp_path / "state"))
    watched = _folder(tmp_path)
    _write(watched / "run.json", results)
    argv = ["--url", live_server.url, "--key", server_key, "watch", "tau2", str(watched), "--once", "--settle", "0"]
    assert main(argv) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line) | {"episode_ids": []} == {
        "file": "run.json",
        "outcome": "uploaded",
        "episode_ids": [],
        "replayed": 0,
        "error": "",
    }
    assert main(argv) == 0 and capsys.readouterr().out == ""  # the state under PRACTICUM_STATE_DIR remembers it
    assert Episode.objects.count() == 2
    assert main(["--url", live_server.url, "--key", server_key, "watch", "tau2", str(tmp_path / "nope"), "--once"]) == 1
    assert "is not a folder" in capsys.readouterr().err
