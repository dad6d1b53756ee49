"""The file manager: a folder tree, the current folder's entries, a preview, and moving by drag or dialog.

Intents: ("cd", dir), ("up",), ("select", file), ("open_file",), ("move_dialog",), ("move_ok",), ("cancel",).
Opening a .csv hands it to the table editor. Dragging an entry onto a folder moves it there (`drop`).
"""

from __future__ import annotations

import environments.desktop.ops as ops
from environments.desktop.layout import ROW_H, Intent, Screen, ad_overlay, frame, split, visible_rows
from environments.desktop.state import HOME, AppData, Ui


def _rel(path: str) -> str:
    return path[len(HOME) + 1 :] if path.startswith(HOME + "/") else "~"


def view(s: Screen, data: AppData) -> None:
    ui = s.ui
    cwd = ui.view.get("files.cwd", HOME)
    cwd = cwd if cwd in data.dirs else HOME  # the shell may have moved the folder away
    window, toolbar, content = frame(s, "files", "~/" + _rel(cwd) if cwd != HOME else "~")
    x, y = toolbar.bounds[:2]
    s.buttons(
        toolbar,
        [("files.up", "Up", ("up",)), ("files.open", "Open", ("open_file",)), ("files.move", "Move to...", ("move_dialog",))],
        (x + 8, y + 4),
    )
    side, main = split(s, "files", content)
    tree = s.add(window, "files.tree", "list", "Folders", side)
    folders = sorted(d for d in data.dirs if d == HOME or d.startswith(HOME + "/"))
    for path, rect in visible_rows(s, "files.tree", folders, side, 24):
        depth = 0 if path == HOME else _rel(path).count("/") + 1
        states = ("selected",) if path == cwd else ()
        s.add(
            tree,
            f"files.dir.{_rel(path)}",
            "listitem",
            path.rsplit("/", 1)[1],
            rect,
            intent=("cd", path),
            states=states,
            style={"icon": "folder", "indent": depth},
        )
    mx, my, mw, mh = main
    opened = ui.view.get("files.opened", "")
    list_rect = (mx + 8, my + 8, mw - 16, mh - 16 - (200 if opened else 0))
    dirs, files = ops.list_dir(data, cwd)
    entries = [(f"{cwd}/{d}", True) for d in dirs] + [(f"{cwd}/{f}", False) for f in files]
    listing = s.add(window, "files.list", "list", "Entries", list_rect)
    for (path, is_dir), rect in visible_rows(s, "files.list", entries, list_rect, ROW_H):
        selected = ("selected",) if path == ui.view.get("files.selected") else ()
        intent: Intent = ("cd", path) if is_dir else ("select", path)
        s.add(
            listing,
            f"files.entry.{path.rsplit('/', 1)[1]}",
            "listitem",
            path.rsplit("/", 1)[1],
            rect,
            intent=intent,
            states=selected,
            style={"icon": "folder" if is_dir else "file"},
        )
    if opened in data.files:
        s.add(window, "files.preview", "text", opened, (mx + 8, my + mh - 200, mw - 16, 190), value=data.files[opened][:400])
    if ui.view.get("files.mode") == "move":
        dialog = s.add(window, "files.move_dialog", "dialog", "Move to folder", (mx + mw // 2 - 220, my + 100, 440, 150), intent=("noop",))
        dx, dy = dialog.bounds[:2]
        s.textbox(dialog, "files.dest", "Destination folder", (dx + 16, dy + 40, 408, 30))
        s.buttons(dialog, [("files.move_ok", "Move here", ("move_ok",)), ("files.cancel", "Cancel", ("cancel",))], (dx + 16, dy + 96), 150)
    ad_overlay(s, window, toolbar, "files")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb, cwd, selected = intent[0], ui.view.get("files.cwd", HOME), ui.view.get("files.selected", "")
    cwd = cwd if cwd in data.dirs else HOME
    if verb in ("cd", "up"):
        target = intent[1] if verb == "cd" else max(ops.parent(cwd), HOME, key=len)
        ui.view.update({"files.cwd": target, "files.selected": "", "files.opened": ""})
        ui.scroll["files.list"] = 0
        return f"opened folder {target}"
    if verb == "select":
        ui.view["files.selected"] = intent[1]
        return f"selected {intent[1]}"
    if verb in ("open_file", "move_dialog") and selected not in data.files:
        raise ops.OpError("select a file first")
    if verb == "open_file":
        if selected.endswith(".csv"):
            ui.view["table.path"], ui.table, ui.app = selected, None, "table"
            return f"opened {selected} in the table editor"
        ui.view["files.opened"] = selected
        return f"showing {selected}"
    if verb == "move_dialog":
        ui.view["files.mode"], ui.focus, ui.fields["files.dest"] = "move", "files.dest", ""
        return "the move dialog is open; type the destination folder"
    if verb == "move_ok":
        target = ops.move(data, selected, ops.resolve(ui.fields.get("files.dest", "").strip() or ".", cwd))
        ui.view.update({"files.mode": "", "files.selected": ""})
        ui.focus = ""
        return f"moved {selected} to {target}"
    if verb == "cancel":
        ui.view["files.mode"], ui.focus = "", ""
        return "cancelled"
    raise ops.OpError(f"the file manager has no action {verb!r}")


def drop(source: Intent, target: Intent, data: AppData, ui: Ui) -> str:
    """Drag `source` (a file or folder entry) onto `target` (a folder): a move."""
    if source[0] not in ("select", "cd") or target[0] != "cd" or source[1] == target[1]:
        raise ops.OpError("drag a file or folder onto a different folder")
    moved = ops.move(data, source[1], target[1])
    if ui.view.get("files.selected") == source[1]:
        ui.view["files.selected"] = ""
    return f"moved {source[1]} to {moved}"
