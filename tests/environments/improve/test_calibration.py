"""improve's calibration: thresholds from the public seeds only, held-out cells and the critic comparison."""

from __future__ import annotations

import pytest

from environments.core import EnvError
from environments.improve import calibration
from environments.registry import get_task


@pytest.mark.slow
def test_it_sets_a_threshold_between_the_floor_and_greedy_and_reports_held_out_cells() -> None:
    result = calibration.calibrate(write=False, tasks=["linear"], heldout_seeds="1000-1002")
    entry = result["tasks"]["linear"]
    public = entry["public_means"]
    assert public["do-nothing"] == 0.0 and public["oracle"] == 1.0
    assert entry["pass_threshold"] == round(min(0.95, max(public["random-valid"] + 0.05, 0.8 * public["greedy"])), 3)
    assert entry["pass_threshold"] == get_task("improve/linear").pass_threshold  # what calibration.json holds
    assert entry["heldout"]["oracle"] == {"mean": 1.0, "ci95": 0.0, "passes": 3, "n": 3}
    assert set(entry["critic"]) == {"critic", "random", "oracle", "difference"}
    report = calibration.report_markdown(result)
    assert "| linear (train) |" in report and "| linear | 6 |" in report


def test_it_refuses_held_out_seeds_that_calibration_uses() -> None:
    with pytest.raises(EnvError, match=r"heldout seeds \[1\] are calibration seeds"):
        calibration.calibrate(write=False, tasks=["linear"], heldout_seeds=[1, 1000])


def test_the_t_interval_is_wider_for_fewer_seeds() -> None:
    assert calibration.ci95([0.0, 1.0]) > calibration.ci95([0.0, 1.0] * 10) > 0.0
    assert calibration.ci95([0.5]) == 0.0
