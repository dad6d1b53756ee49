from __future__ import annotations

import pytest

from environments.desktop.shell import MAX_OUTPUT, run_shell
from environments.desktop.state import HOME
from tests.environments.desktop.conftest import fresh


def test_ls_cat_grep_and_find_read_the_desktops_own_files() -> None:
    data, ui = fresh()
    assert run_shell(data, ui, "ls")[0].split("\n")[:3] == ["Archive/", "Documents/", "Downloads/"]
    assert run_shell(data, ui, "cat Documents/readme.txt") == (data.files[f"{HOME}/Documents/readme.txt"], False)
    hits, failed = run_shell(data, ui, "grep -r -i INVOICE Documents")
    assert not failed and f"{HOME}/Documents/Invoices/invoice_001.pdf:%PDF invoice 001" in hits.split("\n")
    found = run_shell(data, ui, "find ~/Downloads -name '*.pdf' -type f")[0].split("\n")
    assert found == sorted(p for p in data.files if p.startswith(f"{HOME}/Downloads/") and p.endswith(".pdf"))


def test_mv_with_a_glob_moves_every_match_and_cd_changes_the_relative_base() -> None:
    data, ui = fresh()
    pdfs = [p for p in data.files if p.startswith(f"{HOME}/Downloads/") and p.endswith(".pdf")]
    assert not run_shell(data, ui, "cd Downloads")[1] and run_shell(data, ui, "pwd")[0] == f"{HOME}/Downloads"
    output, failed = run_shell(data, ui, "mv *.pdf ../Documents/Invoices")
    assert not failed and len(output.split("\n")) == len(pdfs)
    assert all(f"{HOME}/Documents/Invoices/{p.rsplit('/', 1)[1]}" in data.files and p not in data.files for p in pdfs)


def test_sed_replaces_literal_text_once_or_globally() -> None:
    data, ui = fresh()
    path = f"{HOME}/Documents/readme.txt"
    data.files[path] = "a.b a.b\n"
    assert run_shell(data, ui, "sed -i 's/a.b/x/' Documents/readme.txt") == ("", False) and data.files[path] == "x a.b\n"
    assert run_shell(data, ui, "sed -i 's|a.b|y|g' Documents/readme.txt") == ("", False) and data.files[path] == "x y\n"
    assert "does not occur" in run_shell(data, ui, "sed -i 's/zzz/y/' Documents/readme.txt")[0]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("rm -rf /", "command not found"),
        ("ls; cat /etc/passwd", "not supported"),
        ("cat Documents/readme.txt | grep a", "not supported"),
        ("echo hi > x", "not supported"),
        ("cat ../../etc/passwd", "outside /home/user"),
        ("mv /home/* Archive", "outside /home/user"),
        ("ls /*", "outside /home/user"),
        ("cat 'unbalanced", "cannot parse"),
        ("cat " + "a" * 400, "at most"),
        ("ls " + "a " * 70, "at most 64 arguments"),
        ("grep -z a b", "unknown option"),
        ("find . -exec rm", "usage: find"),
        ("sed 's/a/b/' x", "usage: sed"),
        ("cp Downloads/*.txt Documents/readme.txt", "several sources"),
        ("cat $(reboot)", "only letters"),
    ],
)
def test_hostile_commands_are_refused_with_a_message_and_change_nothing(command: str, message: str) -> None:
    data, ui = fresh()
    before = (dict(data.files), set(data.dirs))
    output, failed = run_shell(data, ui, command)
    assert failed and message in output
    assert (data.files, data.dirs) == before


def test_output_is_cut_at_the_budget_with_a_note() -> None:
    data, ui = fresh()
    data.files[f"{HOME}/big.txt"] = "x" * 9000
    output, failed = run_shell(data, ui, "cat big.txt")
    assert not failed and len(output) < MAX_OUTPUT + 60 and output.endswith(f"[output cut: {9000 - MAX_OUTPUT} more characters]")
