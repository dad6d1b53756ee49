"""`practicum watch inspect`: eval logs that inspect_ai itself writes (its mock model, offline) uploaded to a live
server once each, complete logs only, and not again after a second pass or a restart."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from lab.trajectories.models import Episode
from practicum_client.harnesses import InspectLogs, inspect_log_header
from practicum_client.watch import Watcher
from tests.clients.network import Network

pytestmark = pytest.mark.slow  # inspect_ai runs a real (mock-model) eval first: about 6 s


def _run_inspect(log_dir: Path, fmt: str, samples: int) -> Path:
    """An eval of `samples` samples (each: a tool call, its result, an answer) logged in `fmt` (eval or json)."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    @tool
    def add() -> Any:
        async def execute(x: int, y: int) -> int:
            """Add two numbers.

            Args:
              x: First number.
              y: Second number.
            """
            return x + y

        return execute

    # Usage is given so that the mock model never counts tokens (tiktoken would download its encoding).
    usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)
    outputs = []
    for i in range(samples):
        outputs += [
            ModelOutput.for_tool_call("mockllm/model", "add", {"x": i, "y": 2}).model_copy(update={"usage": usage}),
            ModelOutput.from_content("mockllm/model", str(i + 2)).model_copy(update={"usage": usage}),
        ]
    task = Task(
        name=f"adder_{fmt}",
        dataset=[Sample(input=f"What is {i}+2?", target=str(i + 2), id=f"s{i}") for i in range(samples)],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none", log_format=fmt, max_samples=1)
    assert log.status == "success", log.error
    return Path(log.location)


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inspect")
    return {"eval": _run_inspect(folder / "eval", "eval", 2), "json": _run_inspect(folder / "json", "json", 1)}


def _running_eval(finished: bytes) -> bytes:
    """The archive as inspect holds it mid-run: its journal and samples, no header.json yet."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(finished)) as source, zipfile.ZipFile(out, "w") as running:
        for name in source.namelist():
            if name != "header.json":
                running.writestr(name, source.read(name))
    return out.getvalue()


def test_inspect_logs_are_finished_only_when_whole_and_not_started(inspect_logs: dict[str, Path]) -> None:
    finished = inspect_logs["eval"].read_bytes()
    state, header = inspect_log_header("a.eval", finished)
    assert state == "finished" and header["status"] == "success" and header["eval"]["task"] == "adder_eval"
    assert inspect_log_header("a.eval", finished[: len(finished) // 2])[0] == "partial"
    assert inspect_log_header("a.eval", _running_eval(finished))[0] == "running"
    text = inspect_logs["json"].read_bytes()
    assert inspect_log_header("a.json", text)[0] == "finished"
    assert inspect_log_header("a.json", text[:-40])[0] == "partial"
    started = json.loads(text) | {"status": "started"}
    assert inspect_log_header("a.json", json.dumps(started).encode())[0] == "running"
    assert inspect_log_header("logs.json", b'{"a.eval": {"status": "success"}}')[0] == "foreign"


def test_finished_logs_are_uploaded_once_even_after_a_restart(
    connect: Any, celery_worker: Any, inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    watched = tmp_path / "logs"
    watched.mkdir()
    finished_eval = inspect_logs["eval"].read_bytes()
    (watched / "run.eval").write_bytes(_running_eval(finished_eval))  # still running
    (watched / "other.json").write_bytes(inspect_logs["json"].read_bytes()[:-100])  # cut short mid-write
    (watched / "logs.json").write_text('{"run.eval": {}}')  # inspect's own listing: not a log
    state = tmp_path / "state.json"
    network = Network()
    watcher = Watcher(connect(network), watched, InspectLogs(), settle_s=0, state_file=state)
    first = {h.file: h.outcome for h in watcher.pass_once()}
    assert first == {"run.eval": "waiting", "other.json": "waiting", "logs.json": "unchanged"} and network.posts == []

    (watched / "run.eval").write_bytes(finished_eval)
    (watched / "other.json").write_bytes(inspect_logs["json"].read_bytes())
    second = {h.file: (h.outcome, len(h.episode_ids)) for h in watcher.pass_once()}
    assert second == {"other.json": ("uploaded", 1), "run.eval": ("uploaded", 2)} and len(network.posts) == 2
    stored = sorted((e.task.env, e.task.key, e.passed, e.source) for e in Episode.objects.select_related("task"))
    assert stored == [("adder_eval", "s0", True, "upload"), ("adder_eval", "s1", True, "upload"), ("adder_json", "s0", True, "upload")]
    one = Episode.objects.get(task__env="adder_eval", task__key="s1")
    steps = connect().episodes.steps(one.pk)
    assert [(c["name"], c["arguments"]) for s in steps for c in s.get("tool_calls") or []] == [("add", {"x": 1, "y": 2})]
    assert [r["content"] for s in steps for r in s.get("results") or []] == ["3"]

    assert watcher.pass_once() == [] and len(network.posts) == 2  # a second pass: nothing new
    restarted = Network()
    assert Watcher(connect(restarted), watched, InspectLogs(), settle_s=0, state_file=state).pass_once() == []
    assert restarted.posts == []  # a restarted watcher reads its state: nothing is re-read or re-sent

    # The state lost: every log is sent again under the same keys and answered from the server's record.
    lost = Network()
    again = Watcher(connect(lost), watched, InspectLogs(), settle_s=0, state_file=tmp_path / "new-state.json").pass_once()
    assert {h.file: (h.outcome, h.replayed) for h in again} == {
        "run.eval": ("uploaded", 1),
        "other.json": ("uploaded", 1),
        "logs.json": ("unchanged", 0),
    }
    assert len(lost.posts) == 2
    assert Episode.objects.count() == 3


def test_the_hook_uploads_each_log_when_its_task_ends_and_a_watcher_then_adds_nothing(
    connect: Any, celery_worker: Any, live_server: Any, server_key: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from practicum_client import inspect_hook  # registers the hook, as the package's inspect_ai entry point does

    monkeypatch.setenv("PRACTICUM_URL", live_server.url)
    monkeypatch.setenv("PRACTICUM_API_KEY", server_key)
    monkeypatch.setenv(inspect_hook.ENABLE, "1")
    log = _run_inspect(tmp_path / "logs", "eval", 2)
    assert sorted(Episode.objects.values_list("task__key", flat=True)) == ["s0", "s1"]

    network = Network()
    [handled] = Watcher(connect(network), tmp_path / "logs", InspectLogs(), settle_s=0, state_file=tmp_path / "s.json").pass_once()
    assert (handled.file, handled.outcome, handled.replayed) == (log.name, "uploaded", 1)  # the hook's upload, replayed
    assert Episode.objects.count() == 2

    monkeypatch.setenv(inspect_hook.ENABLE, "0")
    _run_inspect(tmp_path / "quiet", "json", 1)
    assert Episode.objects.count() == 2  # off unless asked for
