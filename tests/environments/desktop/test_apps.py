from __future__ import annotations

from environments.desktop.state import HOME
from environments.desktop.widgets import find
from tests.environments.desktop.conftest import do, new_desktop


def test_replying_through_the_mail_window_sends_a_threaded_reply() -> None:
    env = new_desktop("reply-mail")
    first = env.session.data.mails[0]
    do(env, "open_app", app="mail")
    do(env, "click", id=f"mail.item.{first.id}")
    assert find(env.screen(), "mail.message.body").name == first.body
    do(env, "click", id="mail.reply")
    do(env, "type", text="Will do.")
    sent = do(env, "click", id="mail.send")
    assert sent.content["result"].startswith("sent m10")
    mail = env.session.data.mails[-1]
    assert (mail.to, mail.subject, mail.body, mail.in_reply_to) == (first.sender, f"Re: {first.subject}", "Will do.", first.id)
    do(env, "click", id="mail.folder.inbox")
    assert "open a message first" in do(env, "click", id="mail.reply").content["error"]


def test_the_table_editor_edits_a_cell_and_saves_with_ctrl_s() -> None:
    env = new_desktop("edit-cell")
    path = f"{HOME}/Documents/budget.csv"
    before = env.session.data.files[path]
    do(env, "open_app", app="table")
    do(env, "click", id="table.cell.1.2")
    do(env, "type", text="777")
    do(env, "key", combo="enter")
    assert env.session.data.files[path] == before and find(env.screen(), "table.titlebar").name.endswith("budget.csv *")
    saved = do(env, "key", combo="ctrl+s")
    assert saved.content["result"] == "saved" and env.session.data.files[path].split("\n")[1].split(",")[2] == "777"
    assert "header row" in do(env, "click", id="table.cell.0.1").content["error"]


def test_opening_a_csv_in_files_opens_the_table_editor() -> None:
    env = new_desktop()
    do(env, "open_app", app="files")
    do(env, "click", id="files.dir.Documents")
    do(env, "click", id="files.entry.budget.csv")
    assert do(env, "click", id="files.open").content["result"].endswith("in the table editor") and env.session.ui.app == "table"


def test_settings_toggle_and_choice_apply_at_once() -> None:
    env = new_desktop("change-setting")
    data = env.session.data
    do(env, "open_app", app="settings")
    do(env, "click", id="settings.display.theme.dark")
    assert data.settings["display.theme"] == "dark" and "selected" in find(env.screen(), "settings.display.theme.dark").states
    do(env, "click", id="settings.tab.privacy")
    was = data.settings["privacy.location"]
    do(env, "click", id="settings.privacy.location")
    assert data.settings["privacy.location"] == ("off" if was == "on" else "on")


def test_the_shop_searches_sorts_and_buys_the_picked_item() -> None:
    env = new_desktop("buy-cheapest")
    do(env, "open_app", app="shop")
    do(env, "click", id="shop.query")
    do(env, "type", text="lamp")
    do(env, "key", combo="enter")
    do(env, "click", id="shop.sort")
    items = find(env.screen(), "shop.results").children
    prices = [float(w.name.split(" - $")[1].split(" ")[0]) for w in items]
    assert all("lamp" in w.name for w in items) and prices == sorted(prices)
    do(env, "click", id=items[0].id)
    do(env, "click", id="shop.buy")
    assert env.session.data.orders == [items[0].id.removeprefix("shop.item.")]


def test_the_move_dialog_moves_the_selected_file_by_typed_destination() -> None:
    env = new_desktop()
    do(env, "open_app", app="files")
    do(env, "click", id="files.dir.Documents")
    do(env, "click", id="files.entry.readme.txt")
    do(env, "click", id="files.move")
    do(env, "type", text="../Archive")
    assert do(env, "key", combo="enter").content["result"] == f"moved {HOME}/Documents/readme.txt to {HOME}/Archive/readme.txt"


def test_the_calendar_form_adds_an_event_and_rejects_a_bad_date() -> None:
    env = new_desktop("schedule-event")
    do(env, "open_app", app="calendar")
    do(env, "click", id="calendar.new")
    for i, text in enumerate(("Tea", "Dec 24", "16:00")):
        if i:
            do(env, "key", combo="tab")
        do(env, "type", text=text)
    assert "expected YYYY-MM-DD" in do(env, "click", id="calendar.save").content["error"]
    do(env, "click", id="calendar.date")
    do(env, "key", combo="ctrl+a")
    do(env, "type", text="2026-12-24")
    do(env, "click", id="calendar.save")
    assert [e.title for e in env.session.data.events][-1] == "Tea" and find(env.screen(), "calendar.form") is None
