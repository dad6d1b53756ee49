from __future__ import annotations

from pathlib import Path

import pytest

from environments import stats


def test_write_between_markers_replaces_only_the_marked_block_and_refuses_a_file_without_markers(tmp_path) -> None:
    from environments.stats import write_between_markers

    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- t:start -->\nold\n<!-- t:end -->\nrest\n", encoding="utf-8")
    write_between_markers(readme, "<!-- t:start -->", "<!-- t:end -->", "| new |")
    assert readme.read_text(encoding="utf-8") == "intro\n<!-- t:start -->\n| new |\n<!-- t:end -->\nrest\n"
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="has no <!-- t:start -->"):
        write_between_markers(readme, "<!-- t:start -->", "<!-- t:end -->", "x")


def test_normal_ci95_is_the_1_96_half_width_and_zero_below_two_values() -> None:
    from environments.stats import normal_ci95

    assert normal_ci95([1.0, 0.0, 1.0, 0.0]) == pytest.approx(1.96 * 0.5773502691896257 / 2)
    assert normal_ci95([0.7]) == 0.0


@pytest.mark.slow  # a worker process imports every environment
def test_anchor_grid_runs_every_anchor_on_every_task_of_the_split() -> None:
    from environments.stats import anchor_grid

    grid = anchor_grid("toolgym", ["expert"], _toolgym_cell, workers=1, seeds=2, tasks=["toolgym/echo", "toolgym/lookup"], split="dev")
    assert grid == {
        "seeds": 2,
        "tasks": {
            "toolgym/echo": {"expert": {"task": "toolgym/echo", "anchor": "expert", "mean": 1.0}},
            "toolgym/lookup": {"expert": {"task": "toolgym/lookup", "anchor": "expert", "mean": 1.0}},
        },
    }


def _toolgym_cell(task_id: str, anchor: str, seeds: int) -> dict[str, object]:
    from environments.stats import anchor_scores

    scores = anchor_scores(task_id, anchor, seeds)
    return {"task": task_id, "anchor": anchor, "mean": sum(s["composite"] for s in scores) / seeds}


def test_anchor_table_draws_a_row_per_anchor_a_dash_where_none_and_the_thresholds() -> None:
    result = {
        "seeds": [1000, 1001],
        "cells": {"oracle": {"a": {"score": 1.0}, "b": {"score": 0.5}}, "random": {"a": {"score": 0.25}}},
        "thresholds": {"a": 0.6},
    }
    table = stats.anchor_table_markdown(result, ("a", "b"), caption="mean score.", cell=lambda c: f"{c['score']:.2f}")
    assert table.splitlines() == [
        "Seeds 1000-1001 (2); mean score.",
        "",
        "| anchor | a | b |",
        "| --- | ---: | ---: |",
        "| oracle | 1.00 | 0.50 |",
        "| random | 0.25 | - |",
        "| **pass threshold** | 0.6 | - |",
    ]
    wide = stats.anchor_table_markdown(result, ("a",), caption="x", cell=lambda c: "c", extra=("n", lambda anchor: anchor[:2]))
    assert wide.splitlines()[2:] == [
        "| anchor | a | n |",
        "| --- | ---: | ---: |",
        "| oracle | c | or |",
        "| random | c | ra |",
        "| **pass threshold** | 0.6 | |",
    ]


def test_calibration_write_saves_the_engine_and_the_keys_and_fills_the_readme(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- s -->\nold\n<!-- e -->\nend\n")
    result = {"seeds": [1], "thresholds": {"a": 0.5}, "robustness": {"x": 1.0}, "cells": {}}
    stats.calibration_write(result, engine="2", path=tmp_path / "c.json", readme=readme, markers=("<!-- s -->", "<!-- e -->"), table="T")
    assert (tmp_path / "c.json").read_text() == '{\n "engine": "2",\n "seeds": [\n  1\n ],\n "thresholds": {\n  "a": 0.5\n }\n}\n'
    assert readme.read_text() == "intro\n<!-- s -->\nT\n<!-- e -->\nend\n"


def test_grid_table_has_a_row_per_task_and_a_column_per_anchor() -> None:
    result = {"seeds": 2, "tasks": {"t1": {"a": {"m": 0.5}, "b": {"m": 1.0}}}}
    table = stats.grid_table_markdown(result, ("a", "b"), caption="Mean.", cell=lambda c: f"{c['m']:.1f}")
    assert table.splitlines() == ["Mean.", "| task | a | b |", "| --- | --- | --- |", "| t1 | 0.5 | 1.0 |"]
