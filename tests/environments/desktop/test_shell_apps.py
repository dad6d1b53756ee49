from __future__ import annotations

from environments.desktop.shell import run_shell
from tests.environments.desktop.conftest import fresh


def test_mail_list_read_reply_and_send() -> None:
    data, ui = fresh()
    first = data.mails[0]
    assert run_shell(data, ui, "mail list")[0].split("\n")[0] == f"m1\t{first.sender}\t{first.subject}"
    assert run_shell(data, ui, "mail read m1")[0].endswith(first.body)
    assert run_shell(data, ui, "mail reply m1 --body 'On it.'") == (f"sent m10 to {first.sender}: Re: {first.subject}", False)
    assert run_shell(data, ui, "mail send --to bob@example.org --subject Hi --body Yo")[0] == "sent m11 to bob@example.org"
    assert [m.to for m in data.mails if m.folder == "sent"] == [first.sender, "bob@example.org"]
    assert run_shell(data, ui, "mail list sent")[0].split("\n")[1] == "m11\tbob@example.org\tHi"
    assert "no such message" in run_shell(data, ui, "mail read m99")[0]
    assert "inbox or sent" in run_shell(data, ui, "mail list spam")[0]


def test_settings_get_set_and_refuse_unknown_keys_and_values() -> None:
    data, ui = fresh()
    assert run_shell(data, ui, "settings set display.theme dark") == ("display.theme=dark", False)
    assert run_shell(data, ui, "settings get display.theme") == ("dark", False)
    assert "not one of" in run_shell(data, ui, "settings set display.theme purple")[0]
    assert "unknown" in run_shell(data, ui, "settings get display.colour")[0]
    assert "display.theme=dark\tTheme\t(light|dark|high-contrast)" in run_shell(data, ui, "settings list")[0]


def test_shop_search_filters_sorts_and_buys() -> None:
    data, ui = fresh()
    rows = [r.split("\t") for r in run_shell(data, ui, "shop search --category lamp --max-price 150 --sort price")[0].split("\n")]
    prices = [float(r[3][1:]) for r in rows]
    assert prices == sorted(prices) and all(p <= 150 for p in prices) and all(r[2] == "lamp" for r in rows)
    assert run_shell(data, ui, f"shop buy {rows[0][0]}")[0].startswith(f"bought {rows[0][0]}") and data.orders == [rows[0][0]]
    assert "expected dollars" in run_shell(data, ui, "shop search --max-price lots")[0]
    assert "not in the catalogue" in run_shell(data, ui, "shop buy p999")[0]


def test_cal_and_table_commands() -> None:
    data, ui = fresh()
    assert run_shell(data, ui, "cal add --title 'Tea' --date 2026-12-24 --time 16:00")[0] == "added e10 Tea on 2026-12-24 at 16:00"
    assert "e10\t2026-12-24 16:00\tTea" in run_shell(data, ui, "cal list")[0]
    assert "expected YYYY-MM-DD" in run_shell(data, ui, "cal add --title x --date tomorrow --time 10:00")[0]
    table = run_shell(data, ui, "table get ~/Documents/budget.csv")[0].split("\n")
    assert table[0] == "item | owner | amount | status"
    item = table[1].split(" | ")[0]
    assert not run_shell(data, ui, f"table set Documents/budget.csv {item} amount 4200")[1]
    assert f"{item}," in data.files["/home/user/Documents/budget.csv"] and ",4200," in data.files["/home/user/Documents/budget.csv"]
    assert "usage: table" in run_shell(data, ui, "table set x")[0]
