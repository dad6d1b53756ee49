"""Panel renderers: a tool result becomes what each renderer's template draws."""

from __future__ import annotations

from lab.play.operator import panel_data


def test_a_table_takes_the_rows_an_object_carries_with_one_column_per_key() -> None:
    data = panel_data("table", {"total": 2, "orders": [{"id": 1, "sku": "P01"}, {"id": 2, "qty": 3}]})
    assert data["columns"] == ["id", "sku", "qty"] and (data["total"], data["cut"], data["empty"]) == (2, False, False)
    assert [[c["value"] for c in row["cells"]] for row in data["rows"]] == [[1, "P01", ""], [2, "", 3]]
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
        "src": "data:image/png;base64,AAAA", "alt": "screen", "empty": False
    }  # fmt: skip
    assert panel_data("image", {"src": "https://evil.example/x.png"})["empty"] is True
