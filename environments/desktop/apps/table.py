"""The table editor: a CSV file as a grid. Clicking a cell puts its value in the edit box (typing replaces it),
Enter writes the box into the cell, Save (or ctrl+s) writes the grid back to the file.

Intents: ("cell", row, column), ("save",).
"""

from __future__ import annotations

import environments.desktop.ops as ops
from environments.desktop.layout import Intent, Screen, ad_overlay, frame
from environments.desktop.state import HOME, AppData, Ui

DEFAULT_PATH = f"{HOME}/Documents/budget.csv"
CELL_W, CELL_H = 180, 30


def rows_of(data: AppData, ui: Ui) -> list[list[str]]:
    """The grid being edited: the unsaved buffer, else the file (loaded into the buffer on first use)."""
    if ui.table is None:
        path = ui.view.get("table.path", DEFAULT_PATH)
        ui.table = ops.table_rows(data.files[path]) if path in data.files else []
    return ui.table


def view(s: Screen, data: AppData) -> None:
    ui = s.ui
    path = ui.view.get("table.path", DEFAULT_PATH)
    rows = ui.table if ui.table is not None else ops.table_rows(data.files.get(path, ""))  # viewing loads nothing
    dirty = ops.table_text(rows) != data.files.get(path, "")
    window, toolbar, content = frame(s, "table", path.rsplit("/", 1)[1] + (" *" if dirty else ""))
    x, y = toolbar.bounds[:2]
    s.buttons(toolbar, [("table.save", "Save", ("save",))], (x + 8, y + 4))
    s.textbox(toolbar, "table.edit", "Cell value", (x + 140, y + 4, 400, 28))
    cx, cy, cw, ch = content
    grid = s.add(window, "table.grid", "table", path, (cx + 8, cy + 8, cw - 16, ch - 16))
    selected = ui.view.get("table.cell", "")
    for r, cells in enumerate(rows[:18]):
        row = s.add(grid, f"table.row.{r}", "row", cells[0] if cells else "", (cx + 8, cy + 8 + r * CELL_H, cw - 16, CELL_H))
        for c, value in enumerate(cells[:6]):
            states = ("selected",) if selected == f"{r}.{c}" else ()
            s.add(
                row,
                f"table.cell.{r}.{c}",
                "cell",
                value,
                (cx + 8 + c * CELL_W, cy + 8 + r * CELL_H, CELL_W - 2, CELL_H - 2),
                intent=("cell", str(r), str(c)),
                states=states,
            )
    ad_overlay(s, window, toolbar, "table")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb = intent[0]
    if verb == "cell":
        if intent[1] == "0":
            raise ops.OpError("the header row is not editable")
        value = rows_of(data, ui)[int(intent[1])][int(intent[2])]
        ui.view["table.cell"], ui.fields["table.edit"], ui.focus, ui.select_all = f"{intent[1]}.{intent[2]}", value, "table.edit", True
        return f"cell {intent[1]},{intent[2]} holds {value!r}; typing replaces it, enter keeps it"
    if verb == "save":
        ops.write(data, ui.view.get("table.path", DEFAULT_PATH), ops.table_text(rows_of(data, ui)))
        return "saved"
    raise ops.OpError(f"the table editor has no action {verb!r}")


def enter(data: AppData, ui: Ui) -> str:
    """Enter in the edit box: the box's text goes into the selected cell (not yet the file)."""
    if not ui.view.get("table.cell"):
        raise ops.OpError("click a cell first")
    value = ui.fields.get("table.edit", "")
    if "," in value or len(value) > 60:
        raise ops.OpError(f"value {value[:40]!r}: at most 60 characters and no commas")
    r, c = (int(n) for n in ui.view["table.cell"].split("."))
    rows = rows_of(data, ui)
    if r >= len(rows) or c >= len(rows[r]):
        raise ops.OpError("that cell is gone (the file changed); click a cell first")
    rows[r][c] = value
    return f"cell {r},{c} is now {value!r} (unsaved; ctrl+s saves)"
