"""Panel renderers: a tool result becomes what each renderer's template draws."""

from __future__ import annotations

from lab.play.operator import panel_data


def test_a_table_takes_the_rows_an_object_carries_with_one_column_per_key() -> None:
    data = panel_data("table", {"total": 2, "orders": [{"id": 1, "sku": "P01"}, {"id": 2, "qty": 3}]})
    assert data["columns"] == ["id", "sku", "qty"] and (data["total"], data["cut"], data["empty"]) == (2, False, False)
    assert [[c["value"] for c in row["cells"]] for row in data["rows"]] == [[1, "P01", "—"], [2, "—", 3]]
    assert [row["css"] for row in data["rows"]] == ["", ""]
    assert panel_data("table", {"nothing": 1})["empty"] is True


def test_a_chart_scales_each_numeric_series_over_time_into_the_box() -> None:
    data = panel_data("chart", [{"t": 0, "cash": 100, "label": "x"}, {"t": 5, "cash": 50}, {"t": 10, "cash": 150}])
    (cash,) = data["series"]
    assert (cash["name"], cash["low"], cash["high"], cash["last"]) == ("cash", 50, 150, 150)
    assert cash["points"] == "0.0,60.0 160.0,120.0 320.0,0.0"


def test_chat_files_and_text_shapes() -> None:
    assert panel_data("chat", {"messages": [{"role": "user", "content": "hi"}]})["messages"] == [{"role": "user", "content": "hi"}]
    files = panel_data("files", [{"path": "src/b.py", "content": "b"}, {"path": "a.txt", "content": "a"}, {"no": "path"}])["files"]
    assert [(f["path"], f["depth"]) for f in files] == [("a.txt", 0), ("src/b.py", 1)]
    assert panel_data("text", {"cash": 5, "day": 2}) == {"lines": ["cash: 5", "day: 2"]}
    assert panel_data("json", {"a": [1]}) == {"a": [1]}


def test_an_image_is_drawn_only_from_a_data_url() -> None:
    assert panel_data("image", {"src": "data:image/png;base64,AAAA", "alt": "screen"}) == {
        "src": "data:image/png;base64,AAAA",
        "alt": "screen",
        "empty": False,
    }
    assert panel_data("image", {"src": "https://evil.example/x.png"})["empty"] is True


def test_a_declared_table_sorts_picks_columns_and_highlights_the_first_matching_rule() -> None:
    from environments.meta import Column, Highlight, Panel, SortKey

    panel = Panel(
        "Inventory",
        "get_inventory",
        renderer="table",
        columns=(Column("sku", "SKU"), Column("days_of_cover", "days of cover", missing="no sales in 14 days")),
        sort=(SortKey("days_of_cover"),),
        highlights=(Highlight("days_of_cover", below=3, css="risk"), Highlight("days_of_cover", below=7, css="warn")),
    )
    rows = [
        {"sku": "A", "days_of_cover": None},
        {"sku": "B", "days_of_cover": 9.0, "x": 1},
        {"sku": "C", "days_of_cover": 1.5},
        {"sku": "D", "days_of_cover": 5},
    ]
    data = panel_data("table", {"day": 3, "inventory": rows}, panel)
    assert data["columns"] == ["SKU", "days of cover"]
    assert [(r["cells"][0]["value"], r["css"]) for r in data["rows"]] == [("C", "risk"), ("D", "warn"), ("B", ""), ("A", "")]
    assert data["rows"][0]["cells"][1] == {"value": 1.5, "missing": False, "num": True, "marked": True}
    assert data["rows"][3]["cells"][1] == {"value": "no sales in 14 days", "missing": True, "num": False, "marked": False}  # not "null"


def test_a_ranked_sort_puts_the_listed_values_first_then_breaks_ties() -> None:
    from environments.meta import Panel, SortKey

    panel = Panel(
        "Tickets", "list_tickets", renderer="table", sort=(SortKey("kind", rank=("late", "faulty")), SortKey("day", descending=True))
    )
    rows = [{"kind": "question", "day": 1}, {"kind": "faulty", "day": 1}, {"kind": "late", "day": 1}, {"kind": "faulty", "day": 4}]
    ordered = [[c["value"] for c in r["cells"]] for r in panel_data("table", rows, panel)["rows"]]
    assert ordered == [["late", 1], ["faulty", 4], ["faulty", 1], ["question", 1]]


def test_a_series_chart_takes_one_point_per_recorded_result_or_row_on_one_scale() -> None:
    from environments.meta import Series
    from lab.play.operator import series_chart

    series = (Series("cash", "get_finance", y="cash"), Series("revenue", "get_sales_report", y="revenue", rows=True))
    recorded = {
        "get_finance": [{"day": 0, "cash": 100}, {"day": 2, "cash": 300}, {"day": 2, "cash": 200}, {"error": "x"}],
        "get_sales_report": [{"rows": [{"day": 1, "revenue": 50}, {"sku": "P01", "revenue": 9}]}],
    }
    chart = series_chart(series, recorded)
    cash, revenue = chart["series"]
    assert cash["points"] == [(0, 100), (2, 200)] and cash["last"] == (2, 200)  # a later result replaces a day's point
    assert revenue["points"] == [(1, 50)]  # a row without a day is no point
    assert (chart["x0"], chart["x1"], chart["y_low"], chart["y_high"]) == (0, 2, 0.0, 200)
    assert cash["path"] == "8.0,80.0 892.0,8.0" and revenue["dots"] == [{"x": "450.0", "y": "116.0"}]
    assert series_chart(series, {})["empty"] is True


def test_series_with_one_label_are_one_line_fed_by_several_tools() -> None:
    from environments.meta import Series
    from lab.play.operator import series_chart

    series = (Series("equity", "pnl_history", y="equity", x="t", rows=True), Series("equity", "next_day", y="equity"))
    recorded = {
        "pnl_history": [{"points": [{"t": 25, "equity": 100.0}, {"t": 26, "equity": 90.0}]}],
        "next_day": [{"day": 27, "equity": 95.0}],
    }
    (line,) = series_chart(series, recorded)["series"]
    assert line["name"] == "equity" and line["points"] == [(25, 100.0), (26, 90.0), (27, 95.0)]
