"""The zero-shot table: intervals that respect their bounds, result files read (bad ones named), README kept equal."""

from __future__ import annotations

import json
from pathlib import Path

from training import zeroshot
from training.zeroshot import BEGIN, END, bootstrap, load_results, readme_section, summarise, wilson


def test_wilson_stays_inside_zero_one_at_tiny_n_where_a_t_interval_would_not() -> None:
    for successes, n in [(0, 1), (1, 1), (1, 2), (2, 2), (0, 20), (20, 20)]:
        low, high = wilson(successes, n)
        assert 0.0 <= low <= successes / n <= high <= 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_bootstrap_is_seeded_and_inside_the_values_range() -> None:
    values = [0.0, 0.2, 0.9, 1.0, 0.4]
    assert bootstrap(values) == bootstrap(values)
    low, high = bootstrap(values)
    assert min(values) <= low <= sum(values) / len(values) <= high <= max(values)


def test_a_summary_counts_calls_and_passes() -> None:
    episodes = [
        {"valid_calls": 3, "invalid_calls": 1, "passed": True, "composite": 1.0},
        {"valid_calls": 0, "invalid_calls": 4, "passed": False, "composite": 0.0},
    ]
    summary = summarise(episodes)
    assert (summary["n"], summary["calls"], summary["valid_call_rate"], summary["pass_rate"], summary["composite"]) == (
        2,
        8,
        0.375,
        0.5,
        0.5,
    )


def test_a_malformed_result_file_is_named_and_skipped(tmp_path: Path) -> None:
    good = {
        "player": {"kind": "anchor"},
        "wall_s": 1.0,
        "summary": summarise([{"valid_calls": 1, "invalid_calls": 0, "passed": True, "composite": 1.0}]),
    }
    (tmp_path / "oracle").mkdir()
    (tmp_path / "oracle" / "toolgym.json").write_text(json.dumps(good))
    (tmp_path / "oracle" / "phantom.json").write_text("{not json")
    (tmp_path / "oracle" / "desktop.json").write_text(json.dumps({"summary": {"n": 1}}))
    results, problems = load_results(tmp_path)
    assert list(results) == [("oracle", "toolgym")]
    assert [p.split(":")[0] for p in problems] == ["oracle/desktop.json", "oracle/phantom.json"]
    section = readme_section(tmp_path)
    assert "| toolgym | oracle | 1 |" in section and "oracle/phantom.json: skipped" in section


def test_the_readme_table_is_what_the_committed_result_files_give() -> None:
    text = zeroshot.README.read_text()
    assert BEGIN in text and END in text, "training/README.md lost its zero-shot markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == readme_section().strip(), "run `python -m training.zeroshot report` and commit training/README.md"
