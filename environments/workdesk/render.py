"""The workspace rendered from an evidence graph, with the noise real shared drives have: a stale version of a
file beside the final one, duplicated ledger rows, a slide deck in other units, a conflicting draft memo, an
old weekly summary. Each figure shown is recorded as an Appearance in the graph (path, form, status).

Spreadsheets (`.sheet.json`) and slide decks (`.slides.json`) are structured JSON documents; `view()` renders
them as text for reading, `table_of()` turns CSVs and sheets into calc tables.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from environments.workdesk.calc import CalcError, Table
from environments.workdesk.graph import DEPARTMENTS, REGIONS, TEAMS, WAREHOUSES, Appearance, Graph


def _csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[row[c] for c in columns] for row in rows])
    return out.getvalue()


def _seen(graph: Graph, path: str, form: str, status: str, nodes: list[str]) -> None:
    graph.appearances.extend(Appearance(node, path, form, status) for node in nodes)


def render_workspace(graph: Graph) -> dict[str, str]:
    """path -> text for every file of the organisation's workspace (sorted by path)."""
    n, rec, files = graph.nodes, graph.records, {}
    files["README.md"] = (
        f"# {graph.org}: shared drive\n\nFolders: finance/ (sales, budget, ledger), hr/ (roster), ops/ (shipments),\n"
        "support/ (tickets), board/ (decks), drafts/ (work in progress). Write deliverables under out/.\n"
    )
    path = "finance/sales_2026_final.csv"
    files[path] = _csv(rec["sales"], ("region", "quarter", "revenue_keur"))
    _seen(graph, path, "csv-rows", "current", [f"revenue/{r['region']}/{r['quarter']}" for r in rec["sales"]])
    stale_rows = [dict(r, revenue_keur=n[f"stale/revenue/{r['region']}/Q4"].value) if r["quarter"] == "Q4" else r for r in rec["sales"]]
    path = "finance/sales_2026_v1.csv"
    files[path] = _csv(stale_rows, ("region", "quarter", "revenue_keur"))
    _seen(graph, path, "csv-rows", "stale", [f"stale/revenue/{r}/Q4" for r in REGIONS])
    deck = {
        "title": f"{graph.org}: Q4 review",
        "slides": [
            {
                "title": "Q4 at a glance",
                "bullets": [f"Revenue: {n['revenue_total/Q4'].value / 1000:.1f} MEUR", f"Leading region: {n['top_region/Q4'].text}"],
            },
            {"title": "Regions", "bullets": [f"{r}: {n[f'revenue/{r}/Q4'].value / 1000:.2f} MEUR" for r in REGIONS]},
        ],
    }
    path = "board/q4_review.slides.json"
    files[path] = json.dumps(deck, indent=1)
    _seen(graph, path, "slide-bullet", "current", ["revenue_total/Q4", "top_region/Q4"])
    path = "drafts/q4_memo_draft.md"
    files[path] = (
        "# Q4 memo (DRAFT, not reviewed)\n\n"
        f"Q4 revenue reached {n['draft/revenue_total/Q4'].value} kEUR, led by the {n['draft/top_region/Q4'].text} region.\n"
        "Numbers to be confirmed against the final sales file.\n"
    )
    _seen(graph, path, "prose", "draft", ["draft/revenue_total/Q4", "draft/top_region/Q4"])

    sheet = {
        "sheets": [
            {"name": "Budget 2026", "columns": ["department", "budget_eur"], "rows": [[d, n[f"budget/{d}"].value] for d in DEPARTMENTS]}
        ]
    }
    path = "finance/budget_2026.sheet.json"
    files[path] = json.dumps(sheet, indent=1)
    _seen(graph, path, "sheet-cell", "current", [f"budget/{d}" for d in DEPARTMENTS])
    doubled = {d["invoice_id"] for d in rec["duplicates"]}
    ledger: list[dict[str, Any]] = []
    for row in rec["ledger"]:
        ledger += [row, row] if row["invoice_id"] in doubled else [row]
    path = "finance/ledger_q4.csv"
    files[path] = _csv(ledger, ("invoice_id", "department", "amount_eur", "status"))
    _seen(graph, path, "csv-rows", "current", [f"spend/{d}" for d in DEPARTMENTS])

    path = "hr/roster.csv"
    files[path] = _csv(rec["roster"], ("employee_id", "department", "status"))
    _seen(graph, path, "csv-rows", "current", [f"headcount/{d}" for d in DEPARTMENTS] + [f"attrition/{d}" for d in DEPARTMENTS])
    chart = {
        "title": "Organisation 2025",
        "slides": [
            {"title": "Headcount by department", "bullets": [f"{d}: {n[f'stale/headcount/{d}'].value:.0f} people" for d in DEPARTMENTS]}
        ],
    }
    path = "hr/org_chart_2025.slides.json"
    files[path] = json.dumps(chart, indent=1)
    _seen(graph, path, "slide-bullet", "stale", [f"stale/headcount/{d}" for d in DEPARTMENTS])

    path = "ops/shipments.csv"
    files[path] = _csv(rec["shipments"], ("shipment_id", "warehouse", "lead_time_days"))
    _seen(graph, path, "csv-rows", "current", [f"lead_time/{w}" for w in WAREHOUSES])
    path = "ops/weekly_ops_report.md"
    lines = [f"- {w}: average lead time {n[f'lead_time/{w}'].value * 24:.0f} hours" for w in WAREHOUSES]
    files[path] = "# Weekly operations report\n\n" + "\n".join(lines) + "\n"
    _seen(graph, path, "prose", "current", [f"lead_time/{w}" for w in WAREHOUSES])

    path = "support/tickets.csv"
    files[path] = _csv(rec["tickets"], ("ticket_id", "team", "status", "resolution_hours"))
    _seen(graph, path, "csv-rows", "current", [f"backlog/{t}" for t in TEAMS] + [f"resolution/{t}" for t in TEAMS])
    path = "support/weekly_summary_w48.md"
    files[path] = "# Support summary, week 48\n\n" + "".join(f"- {t}: {n[f'stale/backlog/{t}'].value:.0f} open tickets\n" for t in TEAMS)
    _seen(graph, path, "prose", "stale", [f"stale/backlog/{t}" for t in TEAMS])
    return dict(sorted(files.items()))


def _cell(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def table_of(path: str, text: str) -> Table:
    """A CSV or the first sheet of a spreadsheet as a calc table (numbers where a cell is a number)."""
    if path.endswith(".csv"):
        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            raise CalcError(f"table: {path!r} is empty")
        return Table(tuple(rows[0]), tuple(tuple(_cell(c) for c in row) for row in rows[1:] if len(row) == len(rows[0])))
    if path.endswith(".sheet.json"):
        try:
            sheet = json.loads(text)["sheets"][0]
            return Table(tuple(map(str, sheet["columns"])), tuple(tuple(_cell(str(c)) for c in row) for row in sheet["rows"]))
        except (ValueError, KeyError, IndexError, TypeError):
            raise CalcError(f"table: {path!r} is not a spreadsheet (sheets[0] with columns and rows)") from None
    raise CalcError(f"table: {path!r} is neither a .csv nor a .sheet.json file")


def view(path: str, text: str) -> str:
    """What a reader sees: sheets as aligned grids, slides as numbered bullet lists, anything else as it is."""
    try:
        if path.endswith(".sheet.json"):
            out = []
            for sheet in json.loads(text)["sheets"]:
                out.append(f"[sheet] {sheet['name']}")
                grid = [list(map(str, sheet["columns"]))] + [[str(c) for c in row] for row in sheet["rows"]]
                widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
                out += [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) for row in grid]
            return "\n".join(out) + "\n"
        if path.endswith(".slides.json"):
            deck = json.loads(text)
            out = [f"[deck] {deck['title']}"]
            for i, slide in enumerate(deck["slides"], 1):
                out += [f"Slide {i}: {slide['title']}"] + [f"  * {b}" for b in slide["bullets"]]
            return "\n".join(out) + "\n"
    except (ValueError, KeyError, TypeError):
        return text  # a structured file an agent broke is shown raw
    return text
