from __future__ import annotations

import json

import pytest

from training.aet import main, tables


def test_tables_give_mean_and_ci_over_training_seeds_and_the_paired_actor_difference():
    cell = {"agreement": 1.0, "replay_pass": 0.0, "parsed": 1.0}
    miss = {"agreement": 0.0, "replay_pass": 0.0, "parsed": 0.0}
    result = {
        "data": {"episodes": 4, "passed": 1, "verified": 3, "held_out_verified": 2},
        "diagnoser": {"rule": {0: [cell, cell]}, "fine-tuned": {0: [cell, miss], 1: [cell, cell], 2: [miss, miss]}},
        "actor": {
            "repair": {0: [1.0, 1.0], 1: [1.0, 0.0], 2: [0.0, 0.0]},
            "success-only": {0: [0.0, 1.0], 1: [0.0, 0.0], 2: [0.0, 0.0]},
            "success + repair": {0: [1.0, 1.0], 1: [0.0, 0.0], 2: [0.0, 0.0]},
        },
    }
    text = tables(result)
    assert "| rule | 1.000 | 0.000 | 1.000 | 1 |" in text
    # fine-tuned agreement per seed 0.5, 1, 0: mean 0.5, t(2 df) 4.303 x stdev 0.5 / sqrt(3) = 1.242
    assert "| fine-tuned | 0.500 ± 1.242 | 0.000 ± 0.000 | 0.500 ± 1.242 | 3 |" in text
    assert "| repair | 0.500 ± 1.242 | 3 |" in text
    assert "repair − success-only, paired over seeds and held-out episodes: +0.333" in text
    assert "success + repair − success-only, paired over seeds and held-out episodes: +0.167" in text


@pytest.mark.slow
def test_the_smoke_run_prints_both_tables(tmp_path, capsys):
    assert main(["--smoke", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    for row in (
        "| rule | 1.000 | 1.000 | 1.000 | 1 |",
        "| base |",
        "| fine-tuned |",
        "| repair |",
        "| success-only |",
        "| success + repair |",
    ):
        assert row in text
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["data"] == {"episodes": 16, "passed": 1, "verified": 15, "unlabelled": 0, "held_out_verified": 5}
    recovery = [json.loads(line) for line in (tmp_path / "recovery.jsonl").read_text().splitlines()]
    assert all(r["header"]["meta"]["recovery"]["train_from_step"] >= 2 for r in recovery)
    assert (tmp_path / "diagnoser-seed0").exists() and (tmp_path / "repair-seed0").exists() and (tmp_path / "both-seed0").exists()
