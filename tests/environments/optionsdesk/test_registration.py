"""Registered like every environment: the CLI runs and replays it, Gymnasium wraps it, MCP serves it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from environments.cli import main
from environments.gym import ToolEnvGym
from environments.policies import policy_names

ROOT = Path(__file__).resolve().parents[3]


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
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "environments", "mcp", "optionsdesk/oos", "--seed", "1000"],
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seen: dict = {}

    async def play() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {t.name for t in (await session.list_tools()).tools}
            seen["chain"] = (await session.call_tool("option_chain", {"underlying": "IDX"})).structured_content
            seen["open"] = (await session.call_tool("open_strategy", {"underlying": "IDX", "strategy": "iron_condor"})).structured_content

    anyio.run(play)
    assert "open_strategy" in seen["tools"] and "place_order" not in seen["tools"]
    assert seen["chain"]["underlying"] == "IDX" and len(seen["chain"]["contracts"]) > 10
    assert seen["open"]["position"] == "P1" and len(seen["open"]["legs"]) == 4
