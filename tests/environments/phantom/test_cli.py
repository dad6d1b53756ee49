"""Phantom through the shared CLI: `python -m environments run phantom/<task> --seed 0 --policy <anchor>`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "environments", *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def last_json_line(text: str) -> dict:
    lines = [line for line in text.splitlines() if line.strip().startswith("{")]
    assert lines, f"no JSON line in output: {text!r}"
    return json.loads(lines[-1])


@pytest.mark.parametrize(("policy", "expected"), [("oracle", 1.0), ("random", None)])
def test_run_prints_a_json_line_with_the_composite(policy: str, expected: float | None) -> None:
    done = run_cli("run", "phantom/bridge-dev", "--seed", "0", "--policy", policy)
    assert done.returncode == 0, done.stderr
    result = last_json_line(done.stdout)
    composite = result.get("composite", (result.get("score") or {}).get("composite"))
    assert composite is not None and 0.0 <= composite <= 1.0
    if expected is not None:
        assert composite == expected


def test_list_shows_the_phantom_tasks() -> None:
    done = run_cli("list")
    assert done.returncode == 0, done.stderr
    assert "phantom/bridge-dev" in done.stdout and "phantom/wide-test" in done.stdout


def test_calibrate_prints_the_anchor_table() -> None:
    from environments.phantom.calibration import calibrate, table_markdown

    result = calibrate(workers=1, seeds=8, tasks=["phantom/lookup-dev"])
    cells = result["tasks"]["phantom/lookup-dev"]
    assert cells["oracle"]["mean"] == 1.0 and cells["oracle"]["evidence_recall"] == 1.0
    assert cells["oracle"]["mean"] >= cells["keyword"]["mean"] >= cells["random"]["mean"]
    table = table_markdown(result)
    assert "| phantom/lookup-dev | 1.00 ± 0.00 (1.00) |" in table and "seeds 0-7" in table
