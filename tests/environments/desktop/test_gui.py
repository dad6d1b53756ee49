from __future__ import annotations

from environments.desktop.drift import Drift
from environments.desktop.gui import control_at
from environments.desktop.layout import Screen
from environments.desktop.state import HOME, Ui
from environments.desktop.widgets import find
from tests.environments.desktop.conftest import do, new_desktop

MODAL = Drift(level="high", ads={"files": "modal", "mail": "banner", "shop": "toast"})


def _centre(env, widget_id: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    x, y, w, h = find(env.screen(), widget_id).bounds
    return x + w // 2, y + h // 2


def test_a_click_by_id_and_by_its_coordinates_do_the_same() -> None:
    by_id, by_point = new_desktop(), new_desktop()
    do(by_id, "click", id="launch.mail")
    x, y = _centre(by_point, "launch.mail")
    do(by_point, "click", x=x, y=y)
    assert by_id.session.ui.app == by_point.session.ui.app == "mail"
    assert by_id.state_hash() == by_point.state_hash()


def test_a_stale_id_is_an_error_that_names_the_cause() -> None:
    env = new_desktop()
    result = do(env, "click", id="mail.reply")
    assert result.is_error and "no element 'mail.reply' on screen" in result.content["error"]
    assert env.session.counts["stale_ids"] == 1


def test_a_modal_ad_takes_clicks_until_it_is_closed() -> None:
    env = new_desktop()
    env.drift = MODAL
    do(env, "open_app", app="files")
    covered = next(w.id for w in env.screen().children[0].children[-1:])  # the ad is painted last
    assert covered == "ad.files"
    x, y = _centre(env, "ad.files")
    hit = do(env, "click", x=x, y=y)
    assert hit.content["ad"] is True and hit.content["hit"] == "ad.files" and env.session.counts["ad_hits"] == 1
    closed = do(env, "click", id="ad.files.close")
    assert closed.content["result"] == "closed the promotion" and find(env.screen(), "ad.files") is None


def test_a_banner_covers_the_toolbar_and_escape_does_not_close_it() -> None:
    env = new_desktop()
    env.drift = MODAL
    do(env, "open_app", app="mail")
    assert do(env, "click", id="mail.compose").content.get("ad") is True
    assert do(env, "key", combo="escape").content.get("changed") is False
    do(env, "click", id="ad.mail.close")
    assert do(env, "click", id="mail.compose").content["result"] == "composing a new message"


def test_a_toast_fades_after_three_steps() -> None:
    env = new_desktop()
    env.drift = MODAL
    do(env, "open_app", app="shop")
    assert find(env.screen(), "ad.shop") is not None
    for _ in range(3):
        do(env, "wait")
    assert find(env.screen(), "ad.shop") is None


def test_typing_needs_focus_tab_cycles_fields_and_ctrl_a_replaces() -> None:
    env = new_desktop()
    do(env, "open_app", app="calendar")
    assert "no text box has focus" in do(env, "type", text="x").content["error"]
    do(env, "click", id="calendar.new")
    do(env, "type", text="Tea")
    do(env, "key", combo="tab")
    do(env, "type", text="2026-12-0")
    do(env, "key", combo="backspace")
    do(env, "type", text="2026")
    do(env, "key", combo="ctrl+a")
    do(env, "type", text="2026-12-24")
    assert env.session.ui.fields["calendar.title"] == "Tea" and env.session.ui.fields["calendar.date"] == "2026-12-24"


def test_dragging_a_file_onto_a_folder_moves_it() -> None:
    env = new_desktop()
    do(env, "open_app", app="files")
    do(env, "click", id="files.dir.Downloads")
    name = next(p for p in env.session.data.files if p.startswith(f"{HOME}/Downloads/")).rsplit("/", 1)[1]
    result = do(env, "drag", from_id=f"files.entry.{name}", to_id="files.dir.Archive")
    assert not result.is_error and f"{HOME}/Archive/{name}" in env.session.data.files
    assert [e.entity for e in result.events][:2] == sorted([f"file:{HOME}/Archive/{name}", f"file:{HOME}/Downloads/{name}"])
    assert (
        "drag a file or folder onto a different folder"
        in do(env, "drag", from_id="files.dir.Archive", to_id="files.dir.Archive").content["error"]
    )


def test_scroll_moves_the_list_and_stops_at_either_end() -> None:
    env = new_desktop()
    do(env, "open_app", app="shop")
    first = [w.id for w in find(env.screen(), "shop.results").children][0]
    do(env, "scroll", direction="down", amount=20)
    end = env.session.ui.scroll["shop.results"]
    assert (
        0 < end < 20 and [w.id for w in find(env.screen(), "shop.results").children][-1] == "shop.item." + env.session.data.catalog[-1].id
    )
    assert do(env, "scroll", direction="down").content["changed"] is False
    do(env, "scroll", direction="up", amount=end)
    assert [w.id for w in find(env.screen(), "shop.results").children][0] == first
    assert do(env, "scroll", direction="up").content["changed"] is False
    assert "does not scroll" in do(env, "scroll", direction="down", id="shop.query").content["error"]


def test_a_click_goes_to_the_topmost_widget_and_never_through_it() -> None:
    screen = Screen(Drift(), Ui())
    item = screen.add(screen.root, "files.entry.a", "listitem", "a", (0, 0, 100, 30), intent=("select", "/home/user/a"))
    screen.add(item, "files.entry.a.label", "text", "a", (0, 0, 50, 30))
    screen.add(screen.root, "files.note", "text", "a note painted over the item", (60, 0, 100, 30))
    assert control_at(screen, 10, 10) == (item, ("select", "/home/user/a"))  # the label belongs to the item
    assert control_at(screen, 80, 10)[0].id == "desktop"  # the note covers the item: the click stops there
