"""python -m environments: list, tools, run, replay, contract."""

from __future__ import annotations

import json

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
    assert set(line) == {"env", "task", "seed", "policy", "composite", "passed", "termination_reason", "steps", "sim_days", "wall_s"}
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
