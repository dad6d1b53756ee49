"""python -m environments: list, tools, run, replay, contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from environments.cli import main


def test_list_prints_one_task_a_line_id_first(capsys) -> None:
    assert main(["list"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    store = {parts[0]: parts[1:] for parts in lines if parts[0].startswith("storebench/")}
    assert len(store) == 16
    assert store["storebench/full-year"] == ["test", "365 days"]
    assert store["storebench/launch-week"] == ["train", "30 days"]


def test_tools_prints_the_openai_function_schemas(capsys) -> None:
    assert main(["tools", "storebench"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert len(tools) == 29 and all(t["type"] == "function" for t in tools)
    assert tools[-1]["function"]["name"] == "end_window"


def test_run_prints_one_json_line_and_writes_the_record(tmp_path, capsys) -> None:
    out = tmp_path / "run.jsonl"
    assert main(["run", "storebench/launch-week", "--seed", "9", "--policy", "naive-restock", "--out", str(out)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert set(line) == {
        "env",
        "env_version",
        "task",
        "seed",
        "policy",
        "composite",
        "passed",
        "termination_reason",
        "steps",
        "sim_days",
        "wall_s",
    }
    assert line["sim_days"] == 30 and line["termination_reason"] == "horizon_reached" and line["policy"] == "naive-restock"
    record = json.loads(out.read_text())
    assert len(record["steps"]) == line["steps"] + 1
    assert main(["replay", str(out)]) == 0


def test_unknown_policy_or_task_exits_2_with_a_message(capsys) -> None:
    assert main(["run", "storebench/launch-week", "--policy", "genius"]) == 2
    assert "choose one of" in capsys.readouterr().err
    assert main(["run", "storebench/nowhere"]) == 2
    assert "unknown task" in capsys.readouterr().err


def test_contract_subcommand_reports_per_task(capsys) -> None:
    from environments.contract import check_task

    assert check_task("storebench/viral-trend", seed=3, steps=40) == []


def test_a_seed_outside_int64_is_refused_by_the_cli(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "storebench/launch-week", "--seed", "99999999999999999999"])
    assert exited.value.code == 2
    assert "argument --seed: seed 99999999999999999999 is outside" in capsys.readouterr().err


def test_run_with_an_attack_prints_the_attack_report(capsys) -> None:
    assert main(["run", "storebench/launch-week", "--seed", "104", "--attack", "authority", "--guidance"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["options"] == {"attack": "authority", "guidance": True}
    assert line["attack"]["style"] == "authority" and line["attack"]["goal"] == "archive_product" and line["attack"]["goal_reached"]
    assert [g["kind"] for g in line["attack"]["guidance"]] == ["recode_sku", "address_correction"]


def test_run_refuses_an_unknown_attack_style_naming_the_choices(capsys) -> None:
    assert main(["run", "storebench/launch-week", "--attack", "shouting"]) == 2
    assert "options.attack: \"shouting\" is not one of ['none', 'direct', 'authority', 'quoted', 'split']" in capsys.readouterr().err


def test_attack_eval_prints_the_four_figures_per_anchor(capsys) -> None:
    assert (
        main(["attack-eval", "storebench/launch-week", "--anchors", "smart-triage,hardened", "--seeds", "104", "--styles", "quoted"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "storebench/launch-week, seeds 104-104, 4 episodes"
    assert lines[1].startswith("| anchor | benign utility | utility under attack | ASR | ASR quoted | guidance compliance |")
    naive, hardened = (line.split(" | ") for line in lines[3:5])
    assert naive[3] == "100%" and hardened[3] == "0%" and hardened[-1] == "100% |"


def test_attack_eval_refuses_an_environment_without_an_axis(capsys) -> None:
    assert main(["attack-eval", "toolgym/all", "--anchors", "x"]) == 2
    assert "has no attack axis" in capsys.readouterr().err


def test_run_takes_generic_options_and_an_older_engine(capsys) -> None:
    assert main(["run", "storebench/launch-week", "--seed", "3", "--option", "reward=daily", "--engine", "1.0.0"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert (line["env_version"], line["options"]) == ("1.0.0", {"reward": "daily"}) and "attack" not in line
    assert main(["run", "storebench/launch-week", "--engine", "0.9"]) == 2
    assert "'0.9' is not an engine this installation runs (1.0.0, 2.0.0)" in capsys.readouterr().err
    assert main(["run", "storebench/launch-week", "--option", "reward=weekly"]) == 2
    assert "options.reward: \"weekly\" is not one of ['terminal', 'daily']" in capsys.readouterr().err
    assert main(["run", "storebench/launch-week", "--engine", "1.0.0", "--guidance"]) == 2
    assert "benign guidance needs engine 2.0.0" in capsys.readouterr().err


def test_run_with_a_team_prints_the_roles_accounting_and_writes_a_replayable_record(tmp_path, capsys) -> None:
    out = tmp_path / "team.jsonl"
    argv = ["run", "storebench/launch-week", "--seed", "3", "--policy", "smart-triage", "--critic", "rule-critic", "--critic-every", "5"]
    argv += ["--critic-on-error", "--consultant", "oracle", "--consult-cost", "0.02", "--harness-level", "guided", "--out", str(out)]
    assert main(argv) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["harness_level"] == "guided" and set(line["roles"]) == {"actor", "critic", "consultant", "harness"}
    assert line["roles"]["actor"]["turns"] == line["steps"] - line["roles"]["critic"]["turns"] - line["roles"]["harness"]["turns"]
    assert line["roles"]["critic"]["turns"] == line["roles"]["actor"]["turns"] // 5 and line["reward"] == line["composite"]
    header = json.loads(out.read_text())["header"]
    assert header["team"]["consultant"] == {"policy": {"name": "oracle", "kind": "scripted", "seed": 3}, "cost": 0.02}
    assert main(["replay", str(out)]) == 0


def test_run_refuses_critic_settings_without_a_critic(capsys) -> None:
    assert main(["run", "storebench/launch-week", "--critic-every", "5"]) == 2
    assert "--critic-every, --critic-on-error and --critic-on-request need --critic NAME" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "storebench/launch-week", "--consult-cost", "2"])
    assert "'2' is not a cost within [0, 1]" in capsys.readouterr().err


def test_workflow_plays_a_plan_with_scripted_roles_and_the_record_replays(tmp_path, capsys) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "format": "practicum.workflow/1",
                "nodes": [
                    {"id": "explore", "role": "builder", "instruction": "try proposals", "depends_on": [], "max_steps": 4},
                    {"id": "commit", "role": "executor", "instruction": "adopt and finish", "depends_on": ["explore"], "max_steps": 4},
                ],
            }
        )
    )
    out = tmp_path / "wf.jsonl"
    args = ["workflow", "improve/sparse", "--plan", str(plan), "--role", "builder=greedy", "--role", "executor=greedy", "--seed", "3"]
    assert main([*args, "--out", str(out)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert [(n["id"], n["role"]) for n in line["nodes"]] == [("explore", "builder"), ("commit", "executor")]
    assert set(line["role_rewards"]) == {"generator", "builder", "executor"}
    assert main(["replay", str(out)]) == 0 and json.loads(capsys.readouterr().out)["ok"]
    assert main(args[:-4]) == 0  # the executor role missing: the plan is refused, recorded as agent_error
    refused = json.loads(capsys.readouterr().out)
    assert refused["termination_reason"] == "agent_error" and "'executor' is not a role of the team" in refused["error"]["message"]


def test_calibrate_finds_each_environments_calibration_module_and_names_one_without() -> None:
    from environments.cli import calibration_module
    from environments.core import EnvError

    assert calibration_module("improve-rounds").__name__ == "environments.improve.rounds_calibration"
    assert calibration_module("servicedesk").__name__ == "environments.servicedesk.calibration"
    with pytest.raises(EnvError, match="'toolgym' has no calibration module"):
        calibration_module("toolgym")


@pytest.mark.parametrize("env", ["servicedesk", "improve", "improve-rounds", "storebench", "workdesk"])
def test_calibrate_refuses_bad_heldout_seed_text_with_a_message_not_a_traceback(env: str, capsys: Any) -> None:
    assert main(["calibrate", env, "--heldout-seeds", "1000-x"]) == 2
    assert "'x' is not a seed" in capsys.readouterr().err
