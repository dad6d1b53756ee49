"""rounds_calibration: thresholds from the public seeds, held-out passes, improvement figures, refused seeds."""

from __future__ import annotations

import pytest

from environments.core import EnvError
from environments.improve.rounds_calibration import calibrate, table_markdown


def test_it_calibrates_a_calc_task_without_writing() -> None:
    result = calibrate(write=False, tasks=["digits"], heldout_seeds="1000-1001")
    entry = result["tasks"]["digits"]
    # the improver solves digits on every public seed (1.0), first-try scores ~0.15: 0.8 x 1.0 wins
    assert entry["public_means"]["improver"] == 1.0 and entry["pass_threshold"] == 0.8
    assert entry["heldout"]["do-nothing"] == {"mean": 0.0, "ci95": 0.0, "n": 2, "passes": 0}
    assert entry["heldout"]["oracle"]["passes"] == 2
    assert entry["improvement"]["improver"]["rounds"]["mean"] == 5.0  # five drafts, each submitted once
    assert "| digits (train) | 0.8 |" in table_markdown(result)


def test_it_refuses_public_seeds_and_unknown_tasks() -> None:
    with pytest.raises(EnvError, match=r"heldout seeds \[2\] are calibration seeds"):
        calibrate(write=False, tasks=["gcd"], heldout_seeds=[2, 1000])
    with pytest.raises(EnvError, match="no improve-rounds task among"):
        calibrate(write=False, tasks=["linear"])
