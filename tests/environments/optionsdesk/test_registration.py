"""Registered like every environment: the CLI runs and replays it, Gymnasium wraps it, MCP serves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.cli import main
from environments.gym import ToolEnvGym
from environments.policies import policy_names
from tests.environments.mcp_session import mcp_calls


def test_the_anchors_are_declared() -> None:
    assert policy_names("optionsdesk") == ["always-straddle", "hindsight-oracle", "learned-selector", "no-trade", "regime-rule"]


def test_the_cli_runs_an_episode_with_options_and_replays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "desk.jsonl"
    args = ["run", "optionsdesk/oos", "--seed", "1002", "--policy", "always-straddle", "--option", "window_days=10", "--out", str(out)]
    assert main(args) == 0
    ran = json.loads(capsys.readouterr().out)
    assert ran["termination_reason"] == "horizon_reached" and ran["options"] == {"window_days": 10}
    assert main(["replay", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_gymnasium_plays_a_no_trade_episode_to_its_neutral_score() -> None:
    gym = ToolEnvGym("optionsdesk/validation")
    observation, info = gym.reset(seed=1001)
    assert "options desk" in json.loads(observation)["observation"] and "next_day" in json.loads(observation)["tools"]
    terminated, reward, steps = False, 0.0, 0
    while not terminated:
        _, reward, terminated, _, info = gym.step('{"name": "next_day", "arguments": {}}')
        steps += 1
    assert steps == 60 and reward == 0.5 and info["termination_reason"] == "horizon_reached"


@pytest.mark.slow
def test_an_mcp_client_reads_the_chain_and_trades() -> None:
    tools, (chain, opened) = mcp_calls(
        "optionsdesk/oos",
        1000,
        [("option_chain", {"underlying": "IDX"}), ("open_strategy", {"underlying": "IDX", "strategy": "iron_condor"})],
    )
    seen = {"tools": tools, "chain": chain.structured_content, "open": opened.structured_content}
    assert "open_strategy" in seen["tools"] and "place_order" not in seen["tools"]
    assert seen["chain"]["underlying"] == "IDX" and len(seen["chain"]["contracts"]) > 10
    assert seen["open"]["position"] == "P1" and len(seen["open"]["legs"]) == 4
