from __future__ import annotations

from pathlib import Path

from environments.desktop import calibration


def test_calibration_reports_anchor_scores_robustness_and_thresholds(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    result = calibration.calibrate(heldout_seeds="1000", tasks=["change-setting"])
    cells = result["cells"]
    assert cells["oracle"]["change-setting"]["score"] == 1.0 and cells["random-valid"]["change-setting"]["passed"] == 0.0
    assert result["thresholds"] == {"change-setting": 0.8} and result["robustness"]["oracle"] == 1.0
    table = calibration.table_markdown(result)
    assert "| oracle | - | - | 1.000 / 100% / 1.000 |" in table and "robustness" in table
    readme, stored = tmp_path / "README.md", tmp_path / "calibration.json"
    readme.write_text("a\n<!-- calibration:start -->\nstale-table\n<!-- calibration:end -->\nb\n")
    monkeypatch.setattr(calibration, "README_PATH", readme)
    monkeypatch.setattr(calibration, "CALIBRATION_PATH", stored)
    calibration.write(result)
    assert "stale-table" not in readme.read_text() and calibration.load_thresholds(stored) == {"change-setting": 0.8}
