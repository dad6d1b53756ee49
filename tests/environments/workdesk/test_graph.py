"""The evidence graph and the workspace rendered from it: figures follow from the records, noise is where the
graph says it is, structured documents render for reading."""

from __future__ import annotations

from environments.workdesk.calc import evaluate
from environments.workdesk.graph import DEPARTMENTS, REGIONS, build_graph
from environments.workdesk.render import render_workspace, table_of, view


def _calc(files: dict[str, str], program: str) -> object:
    return evaluate(program, lambda path: table_of(path, files[path]))


def test_the_same_seed_gives_the_same_organisation_and_files() -> None:
    assert render_workspace(build_graph(4)) == render_workspace(build_graph(4))
    assert render_workspace(build_graph(4)) != render_workspace(build_graph(5))


def test_totals_in_the_graph_are_the_sums_of_the_final_file() -> None:
    graph = build_graph(1000)
    files = render_workspace(graph)
    q4 = _calc(files, "sum(col(where(table('finance/sales_2026_final.csv'), 'quarter', '==', 'Q4'), 'revenue_keur'))")
    assert abs(float(q4) - graph.nodes["revenue_total/Q4"].value) < 0.05  # type: ignore[arg-type]
    stale = _calc(files, "sum(col(where(table('finance/sales_2026_v1.csv'), 'quarter', '==', 'Q4'), 'revenue_keur'))")
    assert abs(float(stale) - graph.nodes["stale/revenue_total/Q4"].value) < 0.05  # type: ignore[arg-type]
    assert graph.nodes["stale/revenue_total/Q4"].value < graph.nodes["revenue_total/Q4"].value  # v1 had 85-95% of each region


def test_the_ledger_doubles_four_invoices_and_spend_counts_each_once() -> None:
    graph = build_graph(1000)
    files = render_workspace(graph)
    assert files["finance/ledger_q4.csv"].count("\n") == 1 + 28 + 4
    for department in DEPARTMENTS:
        program = (
            f"t = where(where(table('finance/ledger_q4.csv'), 'department', '==', '{department}'), 'status', '==', 'approved'); "
            "sum(col(unique(t, 'invoice_id'), 'amount_eur'))"
        )
        assert abs(float(_calc(files, program)) - graph.nodes[f"spend/{department}"].value) < 0.01  # type: ignore[arg-type]
    traps = [n for n in graph.nodes if n.startswith("dup/spend/")]
    assert traps and all(graph.nodes[t].value > graph.nodes[t.removeprefix("dup/")].value for t in traps)


def test_appearances_record_file_form_and_status() -> None:
    graph = build_graph(2)
    render_workspace(graph)
    shown = {(a.path, a.form, a.status) for a in graph.appearances_of("revenue_total/Q4")}
    assert shown == {("board/q4_review.slides.json", "slide-bullet", "current")}
    assert graph.current_paths("revenue/North/Q4") == ["finance/sales_2026_final.csv"]
    assert {a.status for a in graph.appearances_of("draft/top_region/Q4")} == {"draft"}
    assert ("revenue_total/Q4", "supersedes", "stale/revenue_total/Q4") in graph.edges
    assert graph.nodes["draft/top_region/Q4"].text != graph.nodes["top_region/Q4"].text
    assert graph.grounded("revenue_total/Q4", {"finance/sales_2026_final.csv": ""})  # through its parts alone


def test_sheets_and_slides_render_as_text_and_the_deck_uses_other_units() -> None:
    graph = build_graph(3)
    files = render_workspace(graph)
    sheet = view("finance/budget_2026.sheet.json", files["finance/budget_2026.sheet.json"]).splitlines()
    assert sheet[0] == "[sheet] Budget 2026" and sheet[1].split(" | ")[0].strip() == "department"
    assert [line.split(" | ")[0].strip() for line in sheet[2:]] == list(DEPARTMENTS)
    deck = view("board/q4_review.slides.json", files["board/q4_review.slides.json"])
    assert f"Revenue: {graph.nodes['revenue_total/Q4'].value / 1000:.1f} MEUR" in deck
    assert all(f"  * {r}: " in deck for r in REGIONS)
    assert view("x.sheet.json", "{broken") == "{broken"  # a broken document is shown raw
