"""An experiment's evidence as committed files (training/experiments/results.py, tables.py): what a full run writes, the room
check, resuming from the files alone, and README tables made from them and kept equal to them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import training.experiments.runner as runner
from training.experiments import Arm, Evaluation, Experiment
from training.experiments.__main__ import main as experiments_cli
from training.experiments.report import read_readme_section
from training.experiments.results import RESULTS, NoRoom, definition_hash, model_identity, portable
from training.experiments.runner import run_experiment
from training.experiments.tables import report, result_from_files, table_markdown
from training.tiny import tiny_model_path

PROBE = Experiment(
    name="probe",
    question="Does one SFT step move the tiny model?",
    method="sft",
    arms=(Arm("sft", "sft", {}, "one SFT step on chain demonstrations"), Arm("start", "none", {}, "the start checkpoint")),
    shared={"max_steps": 1, "batch_size": 2, "max_tokens": 256, "compact_tools": True, "max_result_chars": 200},
    evaluation=Evaluation(task="toolgym/chain", dev_seeds=(50_000, 50_002), test_seeds=(100_000, 100_003), max_turns=2, max_new_tokens=8),
    train_seeds=(0, 1),
    needs_teacher=False,
    prepare="training.experiments.horizon:demonstrations",
)


@pytest.fixture
def full_run(tmp_path: Path) -> tuple[Path, Path, runner.ExperimentResult]:
    """PROBE run in full (not smoke) into a temporary results folder; the tiny model leaves no room, so unchecked."""
    results, out = tmp_path / "results", tmp_path / "out"
    result = run_experiment(
        PROBE,
        base=tiny_model_path(0),
        teacher="",
        out=out,
        progress=False,
        results=results,
        room_check=False,
        command="python -m training.experiments probe",
    )
    return results, out, result


def test_a_full_run_writes_one_portable_file_per_run_with_its_provenance(full_run):
    results, _, result = full_run
    files = sorted((results / "probe").rglob("*.json"))
    names = [str(p.relative_to(results / "probe")) for p in files]
    assert len([n for n in names if n.startswith("sft/")]) == 2 and len([n for n in names if n.startswith("start/")]) == 2
    assert [n for n in names if n.startswith("room-")] == [f"room-{model_identity(tiny_model_path(0))['name']}.json"]
    record = json.loads(next(p for p in files if p.parent.name == "sft").read_text())
    assert record["experiment"] == "probe" and record["definition"] == definition_hash(PROBE) and record["commit"]
    assert record["machine"]["cores"] >= 1 and record["base"] == model_identity(tiny_model_path(0)) and record["teacher"] is None
    assert record["config"]["model"].startswith("model:") and str(tiny_model_path(0)) not in json.dumps(record)
    assert record["config"]["data"].startswith("var/experiments/data/")  # a path in the repository, kept relative
    assert [e["seed"] for e in record["evaluations"]["test"]["episodes"]] == result.test_seeds == [100_000, 100_001, 100_002]


def test_the_table_is_made_from_the_files_and_says_when_the_base_has_no_room(full_run):
    results, _, result = full_run
    table = result_from_files(PROBE, results / "probe")
    assert table is not None and table.room is not None and table.room["reward_mean"] == 0.0
    assert {n: a.rewards for n, a in table.result.arms.items()} == {n: a.rewards for n, a in result.arms.items()}
    text = table_markdown(PROBE, results / "probe")
    assert "| sft | one SFT step" in text and "| start | the start checkpoint" in text
    assert "**No room: the base scores 0.000 on the 3 test seeds" in text and "not evidence" in text
    assert "Command: `python -m training.experiments probe --base practicum-tiny-0-" in text


def test_a_run_resumes_from_its_committed_file_alone(full_run, tmp_path, monkeypatch):
    """Another machine: the run folders are gone, the files are there; nothing is trained or played again."""
    results, out, result = full_run
    shutil.rmtree(out)
    monkeypatch.setattr(runner, "evaluate_checkpoint", lambda *a, **k: pytest.fail("played again"))
    again = run_experiment(
        PROBE, base=tiny_model_path(0), teacher="", out=out, progress=False, results=results, room_check=False, device="cpu"
    )  # fmt: skip  (the device is not part of a run's identity: a series may move to a GPU)
    assert again.trained == 0 and {n: a.rewards for n, a in again.arms.items()} == {n: a.rewards for n, a in result.arms.items()}


def test_a_base_without_room_stops_the_run_before_any_arm_trains(tmp_path, monkeypatch):
    results = tmp_path / "results"
    with pytest.raises(NoRoom, match="scores 0.000 on the 3 test seeds of toolgym/chain"):
        run_experiment(PROBE, base=tiny_model_path(0), teacher="", out=tmp_path / "out", progress=False, results=results)
    assert not (tmp_path / "out").exists() and [p.name for p in (results / "probe").iterdir()] == [
        next((results / "probe").glob("room-*")).name
    ]
    monkeypatch.setattr(runner, "evaluate_checkpoint", lambda *a, **k: pytest.fail("the room check is played once per base"))
    with pytest.raises(NoRoom):
        run_experiment(PROBE, base=tiny_model_path(0), teacher="", out=tmp_path / "out", progress=False, results=results)


def test_report_writes_and_checks_the_readme_and_never_rewrites_it_from_an_unreadable_file(full_run, tmp_path, capsys):
    results, _, _ = full_run
    readme = tmp_path / "README.md"
    readme.write_text("# Probe\n")
    probe = type(PROBE)(**{**PROBE.__dict__, "readme": str(readme)})  # an absolute README: REPO_ROOT / it is it
    assert report([probe], results=results, check=True) == 1 and "differs from its result files" in capsys.readouterr().out
    assert report([probe], results=results) == 0
    assert read_readme_section(readme, "probe") == table_markdown(PROBE, results / "probe").rstrip()
    assert report([probe], results=results, check=True) == 0

    written = readme.read_text()
    (results / "probe" / "sft" / "broken.json").write_text("{not json")
    assert report([probe], results=results) == 1
    said = capsys.readouterr().out
    assert "sft/broken.json: not a readable JSON result" in said and "its table was left as it is" in said
    assert readme.read_text() == written
    (results / "probe" / "sft" / "broken.json").write_text(json.dumps({"arm": "sft"}))
    assert report([probe], results=results) == 1 and "missing point, seed, base, definition, evaluations" in capsys.readouterr().out


def test_runs_on_another_base_and_of_an_earlier_definition_are_counted_apart(full_run):
    results, _, _ = full_run
    folder = results / "probe" / "sft"
    first = sorted(folder.glob("*.json"))[0]
    other = json.loads(first.read_text())
    other["base"], other["finished_at"] = {"name": "smol-base", "hash": "0123456789ab"}, "2000-01-01T00:00:00Z"
    (folder / "other-base.json").write_text(json.dumps(other))
    stale = {**json.loads(first.read_text()), "definition": "000000000000"}
    (folder / "stale.json").write_text(json.dumps(stale))
    table = result_from_files(PROBE, results / "probe")
    assert table is not None and len(table.result.arms["sft"].rewards) == 2  # the newest base's two runs only
    assert "1 run file(s) on another base, smol-base@0123456789ab, are not in this table." in table.notes
    assert any("of an earlier definition of this experiment are stale" in note and "stale.json" in note for note in table.notes)


def test_the_cli_refuses_a_bad_device_and_stray_arguments(capsys):
    assert (
        experiments_cli(["horizon", "--device", "tpu"]) == 2 and "--device='tpu': give auto, cpu, cuda or cuda:N" in capsys.readouterr().err
    )
    assert experiments_cli(["horizon", "extra"]) == 2 and "unexpected argument(s) extra" in capsys.readouterr().err


def test_portable_replaces_model_folders_and_repository_paths_only():
    from training.provenance import REPO_ROOT

    models = {"/somewhere/smol": "model:smol-base@abc"}
    config = {
        "model": "/somewhere/smol",
        "data": str(REPO_ROOT / "var" / "x.jsonl"),
        "lr": 0.1,
        "other": "/etc/passwd",
        "seq": ["/somewhere/smol"],
    }
    assert portable(config, models) == {
        "model": "model:smol-base@abc",
        "data": "var/x.jsonl",
        "lr": 0.1,
        "other": "/etc/passwd",
        "seq": ["model:smol-base@abc"],
    }


def test_every_committed_table_equals_what_its_result_files_give(capsys):
    """A README table is made from its files by `python -m training.experiments report`; any edit by hand, or a result
    file committed without its table (or the reverse), fails here."""
    assert report(check=True) == 0, capsys.readouterr().out
    assert experiments_cli(["report", "--check"]) == 0
    assert RESULTS.is_dir()


def test_the_summary_has_one_row_per_experiment_with_its_headline_and_lists_those_without_files(full_run):
    from training.experiments.tables import summary_markdown

    results, _, _ = full_run
    other = type(PROBE)(**{**PROBE.__dict__, "name": "waiting"})
    text = summary_markdown([PROBE, other], results)
    (row,) = [line for line in text.splitlines() if line.startswith("| probe |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "sft − start" and cells[3] == "2 × 3" and cells[5] == "no room (0.00)"
    assert cells[4].startswith("practicum-tiny-0-") and ("null (MDE" in cells[2] or "gain" in cells[2] or "loss" in cells[2])
    assert "No result files yet" in text and text.rstrip().endswith(": waiting.")


def test_the_room_check_alone_writes_the_room_file_a_full_run_then_reads(tmp_path, monkeypatch):
    """`python -m training.experiments room NAME`: the base played once, nothing trained; the series started later on the
    same base reuses that file rather than play the base again."""
    results = tmp_path / "results"
    room = runner.room_only(PROBE, base=tiny_model_path(0), results=results, progress=False)
    assert room["reward_mean"] == 0.0 and room["verdict"] == "no room" and room["test_seeds"] == [100_000, 100_001, 100_002]
    assert [p.name for p in (results / "probe").iterdir()] == [f"room-{model_identity(tiny_model_path(0))['name']}.json"]
    from training.experiments.results import identity_label
    from training.experiments.tables import summary_markdown

    summary = summary_markdown([PROBE], results)  # no runs yet: the room check is listed, and the experiment as waiting
    assert f"| probe | {identity_label(model_identity(tiny_model_path(0)))} | toolgym/chain | 3 | 0.000 | no room |" in summary
    assert "No result files yet (their tables below" in summary and summary.rstrip().endswith("probe.")
    monkeypatch.setattr(runner, "evaluate_checkpoint", lambda *a, **k: pytest.fail("the room check is played once per base"))
    with pytest.raises(NoRoom):
        run_experiment(PROBE, base=tiny_model_path(0), teacher="", out=tmp_path / "out", progress=False, results=results)


def test_the_room_command_refuses_no_names_and_unknown_models(capsys):
    assert experiments_cli(["room"]) == 2 and "name one or more experiments" in capsys.readouterr().err
    assert experiments_cli(["room", "horizon", "--base", "no-such-model"]) == 2 and "no-such-model" in capsys.readouterr().err


def test_the_room_command_checks_each_named_experiment_on_the_base_and_exits_3_without_room(monkeypatch, tmp_path, capsys):
    import training.experiments.results as results_module

    calls = []

    def fake_room_only(experiment, *, base, results, command, progress=True):
        calls.append((experiment.name, str(base), results, command))
        return {"reward_mean": 0.5 if experiment.name == "horizon" else 1.0, "test_seeds": [1, 2]}

    monkeypatch.setattr(runner, "room_only", fake_room_only)
    monkeypatch.setattr(results_module, "RESULTS", tmp_path)
    base = str(tiny_model_path(0))
    assert experiments_cli(["room", "horizon", "--base", base]) == 0
    assert experiments_cli(["room", "horizon", "self-lookup", "--base", base]) == 3
    said = capsys.readouterr().out
    assert (
        "horizon: toolgym/chain, 2 test seeds: 0.500 (room)" in said
        and "self-lookup: toolgym/lookup, 2 test seeds: 1.000 (no room)" in said
    )
    assert [c[0] for c in calls] == ["horizon", "horizon", "self-lookup"] and all(c[1] == base and c[2] == tmp_path for c in calls)
    assert calls[0][3] == f"python -m training.experiments room horizon --base {base}"
