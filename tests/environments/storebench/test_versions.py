"""Engine versions: 1.0.0 stays frozen (golden chains recorded before 2.0.0 existed), 2.0.0 keeps the outcomes
recorded before its speed-up (golden_v2.json, a full year among them), and every record replays against the
engine it was recorded with, or is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from environments.core import Action, EnvError, Policy, ToolCall, ToolSpec, tool_schema_hash
from environments.registry import make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode
from environments.storebench.env import StoreBenchEnv
from tests.environments.storebench.fixtures.make_golden_v2 import play

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "golden_v1.json").read_text())["episodes"]
GOLDEN_V2 = json.loads((Path(__file__).parent / "fixtures" / "golden_v2.json").read_text())["episodes"]


class Recorded(Policy):
    """Plays back a fixed list of tool calls."""

    name = "recorded"
    kind = "scripted"

    def __init__(self, actions: list[list[Any]]) -> None:
        self.actions = list(actions)

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        name, arguments = self.actions.pop(0)
        return Action(tool_calls=[ToolCall(name=name, arguments=arguments)])

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind}


def _record(episode: dict[str, Any], version: str | None) -> dict[str, Any]:
    env = make(f"storebench/{episode['task']}", seed=episode["seed"], version=version)
    return run_episode(env, Recorded(episode["actions"]), max_steps=len(episode["actions"]))


@pytest.mark.parametrize("episode", GOLDEN, ids=[f"{e['task']}-{e['policy']}" for e in GOLDEN])
def test_engine_1_0_0_reproduces_its_golden_chains_exactly(episode: dict[str, Any]) -> None:
    record = _record(episode, "1.0.0")
    chain = {str(s["index"]): s["state_hash"] for s in record["steps"]}
    assert {k: chain[k] for k in episode["chain"]} == episode["chain"]
    assert record["header"]["env_version"] == "1.0.0"
    assert record["header"]["tool_schema_hash"] == episode["tool_schema_hash"]
    assert record["header"]["score"]["composite"] == episode["composite"]


@pytest.mark.slow
@pytest.mark.parametrize("episode", GOLDEN_V2, ids=[f"{e['task']}-{e['policy']}-{e['seed']}" for e in GOLDEN_V2])
def test_engine_2_0_0_reproduces_its_golden_episodes_exactly(episode: dict[str, Any]) -> None:
    again = play(episode["task"], episode["seed"], episode["policy"], episode["max_steps"], episode["options"])
    assert again["chain"] == episode["chain"]  # first, so a divergence names the 250-step stretch it starts in
    assert again == episode


def test_the_current_engine_is_2_0_0_with_1_0_0_frozen_beside_it() -> None:
    assert (StoreBenchEnv.version, StoreBenchEnv.frozen_versions) == ("2.0.0", ("1.0.0",))
    new, old = make("storebench/launch-week", seed=5), make("storebench/launch-week", seed=5, version="1.0.0")
    assert (new.version, old.version) == ("2.0.0", "1.0.0")
    assert tool_schema_hash(new.tools()) != tool_schema_hash(old.tools())  # 2.0.0 words end_window and list_orders anew
    assert new.state_hash() != old.state_hash()


def test_each_record_replays_on_the_engine_it_was_recorded_with() -> None:
    old = _record(GOLDEN[0], "1.0.0")
    assert replay_record(old)["ok"]
    env = make("storebench/launch-week", seed=5)
    new = run_episode(env, make_policy("smart-triage", env, 5), max_steps=120)
    assert new["header"]["env_version"] == "2.0.0" and replay_record(new)["ok"]
    # The same 1.0.0 actions on the other engine give another world: the version in the header matters.
    wrong = {**old, "header": {**old["header"], "env_version": "2.0.0"}}
    report = replay_record(wrong)
    assert not report["ok"] and report["divergence"]["step"] == 0


def test_a_record_of_an_engine_this_installation_does_not_run_is_refused() -> None:
    old = _record(GOLDEN[2], "1.0.0")
    with pytest.raises(EnvError) as exc:
        replay_record({**old, "header": {**old["header"], "env_version": "0.9"}})
    assert exc.value.code == "unsupported_version" and "1.0.0, 2.0.0" in exc.value.message
