"""A new environment touches only its own folder: a package written to a temporary folder on $PRACTICUM_ENV_PATH is
discovered by the registry and shows in the console (the evaluation and play pages offer its tasks), the API (the
environments endpoint lists it with what it provides) and the runner (an episode runs, through the CLI too), with
no edit anywhere else. What it provides besides its tasks (analyzer, calibration) is found through its metadata."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from environments import registry
from environments.analyzers import analyze_record, analyzer_for
from environments.cli import calibration_module
from environments.cli import main as cli_main
from environments.policies import make_policy
from environments.replay import replay_record
from environments.runner import run_episode

pytestmark = pytest.mark.django_db

# A whole environment: one tool that adds to a counter, a task whose goal is a total, an anchor that reaches it, an
# analyzer and a calibration module. Named so it cannot collide with a real environment or module.
PACKAGE = "zz_countgym"
INIT = '''
"""countgym: add up to a target with one tool."""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

from environments.core import Action, Env, Observation, Policy, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.meta import EnvMeta, Panel
from environments.registry import register, register_env

ADD = ToolSpec("add", "Add n to the counter.", {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 5}},
                                               "required": ["n"], "additionalProperties": False})


class CountEnv(Env):
    name = "countgym"

    def reset(self) -> Observation:
        self.total, self.calls = 0, 0
        return Observation(text=f"Reach {self.task.spec['target']}.")

    def tools(self) -> list[ToolSpec]:
        return [ADD]

    def step(self, call: ToolCall) -> StepResult:
        if call.name != "add" or not isinstance(call.arguments.get("n"), int) or not 1 <= call.arguments["n"] <= 5:
            return StepResult(content={"error": "add takes n from 1 to 5"}, is_error=True)
        self.total += call.arguments["n"]
        self.calls += 1
        return StepResult(content={"total": self.total}, done=self.done, reward=self.score().composite if self.done else 0.0)

    def score(self) -> Score:
        hit = self.total == self.task.spec["target"]
        return Score(composite=1.0 if hit else 0.0, passed=hit)

    def snapshot(self) -> bytes:
        return pickle.dumps((self.total, self.calls))

    def restore(self, blob: bytes) -> None:
        self.total, self.calls = pickle.loads(blob)

    def state_hash(self) -> str:
        return hashlib.sha256(f"{self.total}:{self.calls}".encode()).hexdigest()[:32]

    @property
    def done(self) -> bool:
        return self.total >= self.task.spec["target"] or self.calls >= 10


class Counter(Policy):
    name = "counter"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[ToolCall("add", {"n": 3})])


register(TaskSpec(env="countgym", key="to-nine", split="dev", description="Reach 9.", spec={"target": 9}), CountEnv)
register_env(EnvMeta(env="countgym", playable=True, panels=(Panel("Counter", "add", {"n": 1}, renderer="json"),),
                     anchors={"counter": lambda env, seed: Counter()}, default_anchor="counter",
                     analyzer="zz_countgym.analyzer:CountAnalyzer", calibration="zz_countgym.calibration"))
'''
ANALYZER = """
from environments.analyzers import StepAnalysis


class CountAnalyzer:
    def analyze(self, history, step):
        return StepAnalysis("Count in threes.", 0.5)
"""
CALIBRATION = """
def calibrate(**kwargs):
    return {"countgym/to-nine": {"pass_threshold": 1.0}}


def table_markdown(table):
    return "| task | threshold |"
"""


@pytest.fixture
def countgym(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    package = tmp_path / "extra" / PACKAGE
    package.mkdir(parents=True)
    for name, text in (("__init__.py", INIT), ("analyzer.py", ANALYZER), ("calibration.py", CALIBRATION)):
        (package / name).write_text(textwrap.dedent(text))
    assert "countgym/to-nine" not in {t.id for t in registry.list_tasks()}  # not there before
    monkeypatch.setenv(registry.ENV_PATH_VARIABLE, str(package.parent))
    registry.rediscover()
    yield package
    # Forget it: other tests see the installation's environments only.
    for task_id in [k for k in registry._TASKS if k.startswith("countgym/")]:
        del registry._TASKS[task_id]
    registry._ENVS.pop("countgym", None)
    for module in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[module]
    if str(package.parent) in sys.path:
        sys.path.remove(str(package.parent))
    registry.rediscover()


def test_the_registry_discovers_it_and_finds_what_it_provides(countgym: Path) -> None:
    assert PACKAGE in registry.env_packages() and "environments.storebench" in registry.env_packages()
    assert registry.get_task("countgym/to-nine").spec == {"target": 9}
    assert registry.env_meta("countgym").playable and registry.env_meta("countgym").default_anchor == "counter"
    assert type(analyzer_for("countgym")).__name__ == "CountAnalyzer"
    assert calibration_module("countgym").table_markdown({}) == "| task | threshold |"


def test_the_runner_plays_it_and_the_record_replays(countgym: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = registry.make("countgym/to-nine", seed=1)
    record = run_episode(env, make_policy("counter", env, 1))
    assert record["header"]["env"] == "countgym" and record["header"]["score"]["composite"] == 1.0
    assert [s["results"][0]["content"]["total"] for s in record["steps"][1:]] == [3, 6, 9]
    assert replay_record(record)["ok"]
    assert [a.guidance for _, a in analyze_record(record)] == ["Count in threes."] * 3
    out = tmp_path / "episodes.jsonl"
    assert cli_main(["run", "countgym/to-nine", "--seed", "2", "--policy", "counter", "--out", str(out)]) == 0
    header = json.loads(out.read_text())["header"]
    assert (header["env"], header["seed"], header["score"]["composite"]) == ("countgym", 2, 1.0)


def test_the_api_lists_it_with_what_it_provides(countgym: Path, alice_api: Any) -> None:
    response = alice_api.get("/api/v1/environments/")
    assert response.status_code == 200
    rows = {row["env"]: row for row in response.json()["environments"]}
    assert rows["countgym"] == {
        "env": "countgym",
        "tasks": ["countgym/to-nine"],
        "playable": True,
        "anchors": ["counter"],
        "default_anchor": "counter",
        "analyzer": True,
        "calibration": True,
        "screen": False,
    }
    assert rows["storebench"]["analyzer"] and rows["desktop"]["screen"] and not rows["toolgym"]["calibration"]


def test_the_console_offers_its_tasks(countgym: Path, client: Any, alice: Any) -> None:
    client.force_login(alice)
    evaluations = client.get("/evaluations/").content.decode()
    assert "countgym/to-nine" in evaluations and "countgym/dev" in evaluations
    play = client.get("/play/").content.decode()
    assert "countgym/to-nine" in play


def test_the_api_refuses_a_caller_without_a_key(client: Any) -> None:
    assert client.get("/api/v1/environments/").status_code in (401, 403)
