"""Registered like every environment: the contract holds, the CLI runs and replays with drift, Gymnasium wraps
it, an MCP client plays it, and the play panels show the screen and the home folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.cli import main
from environments.contract import check_task
from environments.gym import ToolEnvGym
from environments.registry import env_meta
from lab.play.operator import panel_data
from tests.environments.desktop.conftest import do, new_desktop
from tests.environments.mcp_session import mcp_calls


def test_the_contract_holds() -> None:
    assert check_task("desktop/errand", seed=7) == []
    assert check_task("desktop/buy-cheapest", seed=11) == []


def test_the_cli_runs_a_drifted_episode_and_replays_it_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "desk.jsonl"
    assert main(["run", "desktop/reply-mail", "--seed", "1002", "--policy", "gui-only", "--option", "drift=high", "--out", str(out)]) == 0
    ran = json.loads(capsys.readouterr().out)
    assert ran["termination_reason"] == "agent_stop" and ran["options"] == {"drift": "high"}
    record = json.loads(out.read_text().splitlines()[0])
    assert record["header"]["options"] == {"drift": "high"} and len({s["state_hash"] for s in record["steps"]}) == len(record["steps"])
    assert main(["replay", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_gymnasium_plays_a_shell_episode() -> None:
    gym = ToolEnvGym("desktop/change-setting")
    observation, _ = gym.reset(seed=1003)
    assert "change-setting" in json.loads(observation)["data"]["goals"][0]["kind"]
    text, _, terminated, _, _ = gym.step('{"name": "shell", "arguments": {"command": "settings list"}}')
    assert "display.theme=" in json.loads(text)["output"] and not terminated
    _, reward, terminated, _, info = gym.step('{"name": "submit", "arguments": {}}')
    assert terminated and reward == 0.0 and info["termination_reason"] == "agent_stop"


def test_the_play_panels_show_the_screen_and_the_home_folder() -> None:
    env = new_desktop()
    meta = env_meta("desktop")
    assert meta.playable and [p.title for p in meta.panels] == ["Screenshot", "Screen", "Home folder"] and meta.default_anchor == "gui-only"
    assert meta.panels[0].renderer == "screenshot" and meta.panels[0].action_tool == "click"  # a click on it clicks there
    screen = panel_data(meta.panels[1].renderer, do(env, meta.panels[1].tool, **meta.panels[1].arguments).content, meta.panels[1])
    home = do(env, meta.panels[2].tool, **meta.panels[2].arguments).content["output"].split("\n")
    assert "[taskbar] group" in json.dumps(screen) and "/home/user/Documents/budget.csv" in home


@pytest.mark.slow
def test_an_mcp_client_clicks_and_uses_the_shell() -> None:
    tools, (click, shell, escape) = mcp_calls(
        "desktop/move-files",
        1000,
        [("click", {"id": "launch.files"}), ("shell", {"command": "pwd"}), ("shell", {"command": "cat /etc/passwd"})],
    )
    seen = {"tools": tools, "click": click.structured_content, "shell": shell.structured_content, "escape": escape}
    assert seen["tools"] == {"observe", "click", "type", "key", "scroll", "drag", "wait", "open_app", "shell", "submit"}
    assert seen["click"]["result"] == "opened files" and seen["shell"] == {"output": "/home/user"}
    assert seen["escape"].is_error and "outside /home/user" in seen["escape"].content[0].text
