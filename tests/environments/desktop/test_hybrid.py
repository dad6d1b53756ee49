from __future__ import annotations

import json

import pytest

from environments.desktop.drift import RENAMES
from environments.desktop.hybrid import ALIASES, HELD_OUT_SEEDS, TRAIN_TASKS, calls_of, check_split, export, main, rejection, solve
from environments.replay import replay_record


@pytest.mark.parametrize("kind", ["gui", "shell", "mixed"])
@pytest.mark.parametrize("drift", ["none", "high"])
def test_each_solver_gives_passing_records_that_replay_on_every_train_task(kind: str, drift: str) -> None:
    for task in TRAIN_TASKS:
        record = solve(kind, task, 7, drift)
        assert rejection(kind, record) is None, (task, record["header"]["score"])
        assert replay_record(record)["ok"] and record["header"]["score"]["passed"]
        names = set(calls_of(record))
        assert (names == {"shell"}) if kind == "shell" else ("shell" not in names if kind == "gui" else names)


def test_the_mixed_solver_uses_the_gui_only_for_a_display_setting_and_the_shell_elsewhere() -> None:
    shares = {}
    for seed in range(12):
        record = solve("mixed", "change-setting", seed, "none")
        goal = record["steps"][0]["meta"]["observation"]["goals"][0]
        shares[goal["section"]] = set(calls_of(record))
    assert shares["display"] == {"open_app", "click"} and shares["privacy"] == {"shell"}
    assert set(calls_of(solve("mixed", "move-files", 3, "high"))) == {"shell"}


def test_a_gui_control_renamed_by_drift_is_found_under_its_new_name() -> None:
    new_names = {name for _, name in RENAMES.values()}
    assert new_names == {n for names in ALIASES.values() for n in names}


def test_a_record_that_did_not_pass_or_mixed_channels_is_rejected() -> None:
    record = solve("shell", "reply-mail", 2, "none")
    failed = {**record, "header": {**record["header"], "score": {**record["header"]["score"], "passed": False}}}
    assert rejection("shell", failed) == "grade failed"
    assert rejection("gui", record) == "wrong channel"


def test_held_out_tasks_and_seeds_are_refused() -> None:
    with pytest.raises(ValueError, match="held out"):
        check_split(["buy-cheapest"], [1])
    with pytest.raises(ValueError, match="edit-cell.*held out"):
        check_split(["edit-cell"], [1])
    with pytest.raises(ValueError, match=f"seed {HELD_OUT_SEEDS} is held out"):
        check_split(["move-files"], [3, HELD_OUT_SEEDS])
    assert main(["export", "--tasks", "errand", "--seeds", "1", "--out", "/nonexistent/never"]) == 2


def test_export_writes_records_rl_tasks_and_a_manifest_that_counts_them(tmp_path) -> None:
    manifest = export(["gui", "shell", "mixed"], ["move-files", "change-setting"], [1, 2], ["none", "high"], tmp_path)
    for kind in ("gui", "shell", "mixed"):
        lines = (tmp_path / f"{kind}.jsonl").read_text().splitlines()
        summary = manifest["kinds"][kind]
        assert len(lines) == summary["kept"] == 8 and summary["rejected"] == {}
        records = [json.loads(line) for line in lines]
        assert {r["header"]["seed"] for r in records} == {1, 2} and all(r["header"]["seed"] < HELD_OUT_SEEDS for r in records)
        actions = [calls_of(r) for r in records]
        assert summary["steps_per_task"] == round(sum(map(len, actions)) / 8, 3)
        assert summary["shell_share"] == round(sum(a.count("shell") for a in actions) / sum(map(len, actions)), 3)
    assert manifest["kinds"]["shell"]["shell_share"] == 1.0 and manifest["kinds"]["gui"]["shell_share"] == 0.0
    assert manifest["trajectories"] == {"kept": 24, "episodes": 24}
    rl = [json.loads(line) for line in (tmp_path / "rl_tasks.jsonl").read_text().splitlines()]
    assert manifest["rl_tasks"] == {"kept": 8, "rejected": 0} and len(rl) == 8
    assert {(t["task"], t["drift"]) for t in rl} == {
        (f"desktop/{k}", d) for k in ("move-files", "change-setting") for d in ("none", "high")
    }
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
