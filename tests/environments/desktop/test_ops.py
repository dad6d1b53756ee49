from __future__ import annotations

import pytest

from environments.desktop import ops
from environments.desktop.state import HOME
from tests.environments.desktop.conftest import fresh


@pytest.mark.parametrize(
    ("path", "expected"),
    [("Documents", f"{HOME}/Documents"), ("~/Pictures/../Downloads/.", f"{HOME}/Downloads"), ("/home/user", HOME), ("~", HOME)],
)
def test_resolve_normalises_paths_inside_home(path: str, expected: str) -> None:
    assert ops.resolve(path) == expected


@pytest.mark.parametrize("path", ["..", "../../etc/passwd", "/etc/passwd", "~/../bob", "/", "a\x00b", "$(reboot)", "x" * 201, ""])
def test_resolve_refuses_escapes_odd_characters_and_huge_paths(path: str) -> None:
    with pytest.raises(ops.OpError):
        ops.resolve(path)


def test_move_refuses_to_overwrite_or_to_move_a_folder_into_itself() -> None:
    data, _ = fresh()
    with pytest.raises(ops.OpError, match="exists already"):
        ops.move(data, f"{HOME}/Documents/readme.txt", f"{HOME}/Documents/readme.txt")
    with pytest.raises(ops.OpError, match="into itself"):
        ops.move(data, f"{HOME}/Documents", f"{HOME}/Documents/Invoices")
    with pytest.raises(ops.OpError, match="no such file"):
        ops.move(data, HOME, f"{HOME}/Archive")


def test_moving_a_folder_carries_its_files_and_subfolders() -> None:
    data, _ = fresh()
    ops.move(data, f"{HOME}/Documents", f"{HOME}/Archive")
    assert f"{HOME}/Archive/Documents/Invoices/invoice_001.pdf" in data.files
    assert f"{HOME}/Archive/Documents/Invoices" in data.dirs and f"{HOME}/Documents" not in data.dirs
    assert not any(p.startswith(f"{HOME}/Documents/") for p in data.files)


def test_table_set_edits_one_cell_and_validates_row_column_and_value() -> None:
    data, _ = fresh()
    path = f"{HOME}/Documents/budget.csv"
    row = ops.table_rows(data.files[path])[1]
    ops.table_set(data, path, row[0], "status", "approved")
    assert ops.table_rows(data.files[path])[1] == [row[0], row[1], row[2], "approved"]
    for args, message in [
        ((row[0], "colour", "x"), "no column"),
        (("nothing", "status", "x"), "no row"),
        ((row[0], "status", "a,b"), "no commas"),
    ]:
        with pytest.raises(ops.OpError, match=message):
            ops.table_set(data, path, *args)


def test_mail_event_and_setting_inputs_are_checked() -> None:
    data, _ = fresh()
    with pytest.raises(ops.OpError, match="not an address"):
        ops.mail_send(data, "bob", "hi", "")
    with pytest.raises(ops.OpError, match="YYYY-MM-DD"):
        ops.event_add(data, "Gym", "2026-13-01", "10:00")
    with pytest.raises(ops.OpError, match="not one of"):
        ops.setting_set(data, "display.theme", "purple")
    reply = ops.mail_reply(data, "m1", "ok")
    assert (reply.folder, reply.in_reply_to, reply.subject) == ("sent", "m1", f"Re: {data.mails[0].subject}")
