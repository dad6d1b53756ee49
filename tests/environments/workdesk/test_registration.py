"""Registered like every environment: the anchors order as they should, the CLI runs and replays, Gymnasium
wraps it, the contract holds, and the play panel is a file browser whose editor saves through write_file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.cli import main
from environments.contract import check_task
from environments.gym import ToolEnvGym
from environments.policies import make_policy, policy_names
from environments.registry import env_meta, make
from environments.runner import run_episode
from lab.play.operator import panel_data
from tests.environments.mcp_session import mcp_calls
from tests.environments.workdesk.conftest import do, new_desk


def test_the_anchors_are_declared() -> None:
    assert policy_names("workdesk") == ["do-nothing", "oracle", "shallow-reader"]


@pytest.mark.parametrize("task", ["analyst", "accountant", "hr", "operations", "support-lead", "quarter-close"])
def test_the_oracle_passes_and_the_shallow_reader_and_do_nothing_fail(task: str) -> None:
    scores = {}
    for anchor in ("oracle", "shallow-reader", "do-nothing"):
        env = make(f"workdesk/{task}", seed=1001)
        scores[anchor] = run_episode(env, make_policy(anchor, env, 1001))["header"]["score"]
    assert scores["oracle"]["composite"] == 1.0 and scores["oracle"]["passed"]
    assert not scores["shallow-reader"]["passed"] and scores["shallow-reader"]["composite"] < 0.5
    assert scores["do-nothing"]["composite"] == 0.0 and not scores["do-nothing"]["passed"]


def test_the_contract_holds() -> None:
    assert check_task("workdesk/quarter-close", seed=7) == []
    assert check_task("workdesk/support-lead", seed=11) == []


def test_the_cli_runs_an_episode_and_replays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "desk.jsonl"
    assert main(["run", "workdesk/accountant", "--seed", "1002", "--policy", "shallow-reader", "--out", str(out)]) == 0
    ran = json.loads(capsys.readouterr().out)
    assert ran["termination_reason"] == "agent_stop" and ran["passed"] is False
    assert main(["replay", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_gymnasium_plays_a_do_nothing_episode_to_zero() -> None:
    gym = ToolEnvGym("workdesk/hr")
    observation, _ = gym.reset(seed=1003)
    assert "out/headcount_report.md" in json.loads(observation)["observation"]
    _, reward, terminated, _, info = gym.step('{"name": "submit", "arguments": {}}')
    assert terminated and reward == 0.0 and info["termination_reason"] == "agent_stop"


def test_the_files_panel_shows_the_workspace_and_saving_writes_the_deliverable() -> None:
    env = new_desk("operations", 1000)
    panel = env_meta("workdesk").panels[0]
    assert (panel.renderer, panel.action_tool) == ("files", "write_file")
    drawn = panel_data(panel.renderer, do(env, panel.tool, **panel.arguments).content, panel)
    assert [f["path"] for f in drawn["files"]] == sorted(env.desk.files) and drawn["files"][0]["depth"] == 0
    saved = do(env, panel.action_tool, path=env.desk.task.deliverable, content="## Summary\nwip\n")
    assert not saved.is_error and env.desk.files[env.desk.task.deliverable] == "## Summary\nwip\n"


@pytest.mark.slow
def test_an_mcp_client_reads_computes_and_writes() -> None:
    tools, (calc, escape, write) = mcp_calls(
        "workdesk/support-lead",
        1000,
        [
            ("calc", {"program": "rows(table('support/tickets.csv'))"}),
            ("calc", {"program": "x.__class__"}),
            ("write_file", {"path": "out/a.md", "content": "hi"}),
        ],
    )
    seen = {"tools": tools, "calc": calc.structured_content, "escape": escape, "write": write.structured_content}
    assert seen["tools"] == {"list_files", "read_file", "search", "write_file", "edit_file", "calc", "submit"}
    assert seen["calc"] == {"value": 36.0} and seen["write"] == {"path": "out/a.md", "chars": 2}
    assert seen["escape"].is_error and "attribute access" in seen["escape"].content[0].text
