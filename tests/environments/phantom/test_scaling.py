"""Search scaling: episode counts by tool, grouped by the question's hop count."""

from __future__ import annotations

import pytest

from environments.phantom.scaling import episode_row, main, scaling_table, table_markdown


def _record(task: str, seed: int, calls: list[str], exact: float) -> dict:
    steps = [{"source": "env"}] + [{"source": "agent", "tool_calls": [{"name": name}]} for name in calls]
    return {"header": {"env": "phantom", "task": task, "seed": seed, "score": {"components": {"exact_match": exact}}}, "steps": steps}


def test_an_episode_row_counts_the_agents_calls_by_tool_against_the_questions_support() -> None:
    import environments.phantom  # noqa: F401
    from environments.registry import make

    question = make("phantom/bridge-dev", 4).question
    row = episode_row(_record("bridge-dev", 4, ["search", "search", "open_article", "search", "open_article", "answer"], 1.0))
    assert row["hops"] == 2.0 and row["support"] == len(question.support)
    assert (row["searches"], row["opens"], row["calls"], row["exact_match"]) == (3.0, 2.0, 6.0, 1.0)
    assert row["searches_per_article"] == pytest.approx(3 / len(question.support))


def test_the_table_averages_each_hop_count_separately() -> None:
    rows = [
        {"hops": 2.0, "searches": 2.0, "opens": 2.0, "calls": 5.0, "searches_per_article": 1.0, "exact_match": 1.0},
        {"hops": 1.0, "searches": 1.0, "opens": 1.0, "calls": 3.0, "searches_per_article": 1.0, "exact_match": 0.0},
        {"hops": 2.0, "searches": 4.0, "opens": 2.0, "calls": 7.0, "searches_per_article": 2.0, "exact_match": 0.0},
    ]
    table = scaling_table(rows)
    assert list(table) == [1, 2]
    assert table[2] == {"episodes": 2.0, "searches": 3.0, "opens": 2.0, "calls": 6.0, "searches_per_article": 1.5, "exact_match": 0.5}
    text = table_markdown({"a": table})
    assert "| 2 | a | 2 | 3.00 | 2.00 | 6.00 | 1.50 | 0.50 |" in text


def test_the_cli_prints_one_line_per_hop_count_and_anchor(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--task", "phantom/lookup-dev", "--seeds", "3", "--anchors", "oracle,multisearch"]) == 0
    out = capsys.readouterr().out
    assert "| 1 | oracle | 3 |" in out and "| 1 | multisearch | 3 |" in out
    assert main(["--anchors", "genius"]) == 2
