"""Calibration: success per anchor x user profile x split, and the README table between its markers."""

from __future__ import annotations

from pathlib import Path

from environments.servicedesk.calibration import TABLE_END, TABLE_START, calibrate, table_markdown, write_readme


def test_it_counts_passes_per_anchor_profile_and_split_and_writes_the_table(tmp_path: Path) -> None:
    result = calibrate(heldout_seeds="0-1", tasks=["roaming-on", "cancel-shipped-order", "return-too-late"], profiles=["cooperative"])
    cells = result["cells"]
    assert result["profiles"] == ["cooperative"] and result["seeds"] == [0, 1]
    assert cells["oracle"]["cooperative"] == {"train": [2, 2], "dev": [2, 2], "test": [2, 2]}
    assert cells["do-nothing"]["cooperative"] == {"train": [0, 2], "dev": [0, 2], "test": [0, 2]}
    table = table_markdown(result)
    assert "| oracle | cooperative | 2/2 (100%) | 2/2 (100%) | 2/2 (100%) |" in table
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{TABLE_START}\nold\n{TABLE_END}\nafter\n")
    write_readme(result, readme)
    assert readme.read_text() == f"# x\n{TABLE_START}\n{table}\n{TABLE_END}\nafter\n"


def test_the_published_table_covers_every_anchor() -> None:
    text = (Path(__file__).parents[3] / "environments/servicedesk/README.md").read_text()
    published = text.split(TABLE_START)[1].split(TABLE_END)[0]
    assert all(f"| {a} | cooperative |" in published for a in ("oracle", "shortcut", "random-valid", "do-nothing"))
