"""The workdesk tools: ranged reads, rendered documents, search, writes confined to out/, exact edits, calc,
and an episode that ends on submit or at the call cap."""

from __future__ import annotations

import pytest

from environments.workdesk.env import MAX_CALLS, READ_LINES
from tests.environments.workdesk.conftest import do, new_desk


def test_read_file_returns_the_asked_line_range_numbered() -> None:
    env = new_desk("analyst", 1000)
    got = do(env, "read_file", path="finance/sales_2026_final.csv", start=2, end=3).content
    rows = env.desk.files["finance/sales_2026_final.csv"].splitlines()
    assert got["text"] == f"2: {rows[1]}\n3: {rows[2]}" and got["total_lines"] == 17
    assert do(env, "read_file", path="hr/roster.csv").content["end"] == min(READ_LINES, 41)
    assert env.desk.reads == {"hr/roster.csv"}  # read whole; 2 of the sales file's 17 lines are a peek, not a read
    assert env.desk.lines_seen["finance/sales_2026_final.csv"] == {2, 3}


def test_sheets_read_as_grids_unless_raw() -> None:
    env = new_desk("accountant", 1000)
    assert do(env, "read_file", path="finance/budget_2026.sheet.json").content["text"].startswith("1: [sheet] Budget 2026")
    assert do(env, "read_file", path="finance/budget_2026.sheet.json", raw=True).content["text"].startswith("1: {")


def test_search_finds_lines_across_files_case_insensitively() -> None:
    env = new_desk("support-lead", 1000)
    hits = do(env, "search", text="WEEK 48").content
    assert hits == {"hits": ["support/weekly_summary_w48.md:1: # Support summary, week 48"], "total": 1}


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "out/../finance/x.csv", "out/a b.md", "~/.ssh/id_rsa"])
def test_paths_outside_the_workspace_form_are_refused(path: str) -> None:
    env = new_desk()
    for tool, args in (("read_file", {"path": path}), ("write_file", {"path": path, "content": "x"})):
        result = do(env, tool, **args)
        assert result.is_error and "does not match the expected form" in result.content["error"]


def test_writes_only_go_under_out_and_edits_need_one_occurrence() -> None:
    env = new_desk()
    refused = do(env, "write_file", path="finance/sales_2026_final.csv", content="region\n")
    assert refused.is_error and refused.content["error"] == "path: 'finance/sales_2026_final.csv' is read-only; write under out/"
    assert do(env, "write_file", path="out/note.md", content="a b a").content == {"path": "out/note.md", "chars": 5}
    twice = do(env, "edit_file", path="out/note.md", old="a", new="c")
    assert twice.is_error and twice.content["error"] == "old: found 2 times in out/note.md; it must occur exactly once"
    do(env, "edit_file", path="out/note.md", old="b", new="B")
    assert env.desk.files["out/note.md"] == "a B a"
    assert do(env, "write_file", path="out/big.md", content="x" * 8001).is_error


def test_calc_errors_come_back_as_results_not_exceptions() -> None:
    env = new_desk()
    result = do(env, "calc", program="(" * 100 + "1" + ")" * 100)
    assert result.is_error and result.content["error"] == "calc: program: nested deeper than 32 levels"
    table = do(env, "calc", program="where(table('finance/sales_2026_final.csv'), 'region', '==', 'North')").content["value"]
    assert table["columns"] == ["region", "quarter", "revenue_keur"] and table["total_rows"] == 4
    listed = do(env, "calc", program="[table('README.md'), 1]")
    assert listed.is_error and "neither a .csv nor a .sheet.json" in listed.content["error"]
    nested = do(env, "calc", program="[rows(table('hr/roster.csv')), [where(table('hr/roster.csv'), 'status', '==', 'left')]]").content
    assert nested["value"][0] == 40.0 and nested["value"][1][0]["columns"] == ["employee_id", "department", "status"]


def test_the_file_browser_shows_contents_and_counts_them_read() -> None:
    env = new_desk()
    listed = do(env, "list_files", under="hr").content["files"]
    assert [f["path"] for f in listed] == ["hr/org_chart_2025.slides.json", "hr/roster.csv"] and not env.desk.reads
    shown = do(env, "list_files", under="hr", show_content=True).content["files"]
    assert shown[0]["content"].startswith("[deck] Organisation 2025") and env.desk.reads == {
        "hr/org_chart_2025.slides.json",
        "hr/roster.csv",
    }


def test_the_episode_ends_at_the_call_cap_and_is_graded_then() -> None:
    env = new_desk("operations", 1001)
    for _ in range(MAX_CALLS - 1):
        assert not do(env, "list_files").done
    last = do(env, "list_files")
    assert last.done and last.termination_reason == "max_steps" and env.score().composite == 0.0
    assert do(env, "submit").is_error


def test_the_state_hash_follows_reads_and_writes() -> None:
    a, b = new_desk(), new_desk()
    assert a.state_hash() == b.state_hash()
    do(a, "read_file", path="README.md")
    assert a.state_hash() != b.state_hash()
    do(b, "read_file", path="README.md")
    assert a.state_hash() == b.state_hash()
