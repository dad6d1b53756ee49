"""What the GUI tools do to the state: clicks (by id or coordinates), typing, keys, scrolling, drags, waiting.

A click by id is a click at the centre of that element, so whatever is painted on top there (an ad) takes it,
as on a real screen. The control hit is the topmost widget under the point (widgets.hit_test) or its nearest
ancestor with an intent (a label inside a button clicks the button; a window absorbs clicks on its background).
Every function returns an `Outcome` or raises OpError with a message the agent can act on.
"""

from __future__ import annotations

from dataclasses import dataclass

import environments.desktop.ops as ops
from environments.desktop.apps import MODULES, files, shop, table
from environments.desktop.layout import Intent, Screen
from environments.desktop.state import APPS, AppData, Ui
from environments.desktop.widgets import Widget, find, hit_test, walk

KEYS = ("enter", "tab", "escape", "backspace", "ctrl+s", "ctrl+a")
SCROLLABLE = {"files": "files.list", "mail": "mail.list", "calendar": "calendar.list", "shop": "shop.results"}
MAX_FIELD = 500
MAX_SCROLL = 200


@dataclass(frozen=True)
class Outcome:
    message: str
    hit: str = ""  # the widget id that took a click ("" for non-clicks)
    ad: bool = False  # the click landed on a promotion
    noop: bool = False  # nothing on screen or in the data could change


def point_of(screen: Screen, target: str | None, x: int | None, y: int | None) -> tuple[int, int]:
    if target is not None:
        widget = find(screen.root, target)
        if widget is None:
            raise ops.OpError(f"no element {target[:80]!r} on screen; ids change with the screen (observe shows the current ones)")
        bx, by, bw, bh = widget.bounds
        return bx + bw // 2, by + bh // 2
    if x is None or y is None:
        raise ops.OpError("give either id, or both x and y")
    return x, y


def _path(root: Widget, target: Widget) -> list[Widget]:
    """The chain of visible widgets from `root` down to `target` (empty when it is not under root)."""
    if root is target:
        return [root]
    for child in root.children:
        if child.visible and (found := _path(child, target)):
            return [root, *found]
    return []


def control_at(screen: Screen, x: int, y: int) -> tuple[Widget, Intent]:
    """The control a click at (x, y) operates: hit_test's topmost widget, or its nearest ancestor with an intent."""
    top = hit_test(screen.root, x, y) or screen.root
    hit = next((w for w in reversed(_path(screen.root, top)) if w.id in screen.intents), screen.root)
    return hit, screen.intents.get(hit.id, ("noop",))


def open_app(data: AppData, ui: Ui, app: str) -> Outcome:
    if app not in APPS:
        raise ops.OpError(f"app {app[:30]!r}: one of {', '.join(APPS)}")
    if (
        app == "table"
        and ui.table is not None
        and ops.table_text(ui.table) == data.files.get(ui.view.get("table.path", table.DEFAULT_PATH))
    ):
        ui.table = None  # a saved buffer re-reads the file, which the shell may have changed since
    ui.app, ui.focus, ui.opened_at[app] = app, "", ui.tick
    return Outcome(f"opened {app}")


def apply_intent(intent: Intent, data: AppData, ui: Ui) -> Outcome:
    verb = intent[0]
    if verb == "noop":
        return Outcome("nothing happens there", noop=True)
    if verb == "open":
        return open_app(data, ui, intent[1])
    if verb == "close":
        ui.app, ui.focus = "", ""
        return Outcome("closed the window")
    if verb == "focus":
        ui.focus, ui.select_all = intent[1], False
        return Outcome(f"{intent[1]} has focus; type to fill it")
    if verb == "ad":
        return Outcome("that was a promotion: it opened a sales page and nothing else happened", ad=True, noop=True)
    if verb == "dismiss":
        ui.dismissed.add(intent[1])
        return Outcome("closed the promotion")
    return Outcome(MODULES[ui.app].act(intent, data, ui))


def click(screen: Screen, data: AppData, ui: Ui, target: str | None, x: int | None, y: int | None) -> Outcome:
    hit, intent = control_at(screen, *point_of(screen, target, x, y))
    outcome = apply_intent(intent, data, ui)
    return Outcome(outcome.message, hit.id, outcome.ad, outcome.noop)


def type_text(ui: Ui, text: str) -> Outcome:
    if not ui.focus:
        raise ops.OpError("no text box has focus; click one first")
    before = "" if ui.select_all else ui.fields.get(ui.focus, "")
    if len(before) + len(text) > MAX_FIELD:
        raise ops.OpError(f"{ui.focus}: at most {MAX_FIELD} characters")
    ui.fields[ui.focus], ui.select_all = before + text, False
    return Outcome(f"{ui.focus} now reads {ui.fields[ui.focus][-80:]!r}")


def press(screen: Screen, data: AppData, ui: Ui, combo: str) -> Outcome:
    combo = combo.lower().replace(" ", "")
    if combo not in KEYS:
        raise ops.OpError(f"key {combo[:30]!r}: one of {', '.join(KEYS)}")
    if combo == "ctrl+a":
        ui.select_all = bool(ui.focus)
        return Outcome("selected the field's text" if ui.focus else "nothing to select", noop=not ui.focus)
    if combo == "backspace":
        if not ui.focus:
            return Outcome("no field has focus", noop=True)
        text = ui.fields.get(ui.focus, "")
        ui.fields[ui.focus], ui.select_all = "" if ui.select_all else text[:-1], False
        return Outcome(f"{ui.focus} now reads {ui.fields[ui.focus][-80:]!r}")
    if combo == "tab":
        boxes = [screen.keys[w.id] for w in walk(screen.root) if w.role == "textbox"]
        if not boxes:
            return Outcome("no text box on screen", noop=True)
        ui.focus = boxes[(boxes.index(ui.focus) + 1) % len(boxes)] if ui.focus in boxes else boxes[0]
        return Outcome(f"{ui.focus} has focus")
    if combo == "escape":
        return _escape(screen, ui)
    if combo == "ctrl+s":
        if ui.app != "table":
            return Outcome("nothing to save here", noop=True)
        return Outcome(table.act(("save",), data, ui))
    handlers = {
        "table.edit": lambda: table.enter(data, ui),
        "shop.query": lambda: shop.act(("search",), data, ui),
        "files.dest": lambda: files.act(("move_ok",), data, ui),
    }
    handler = handlers.get(ui.focus)
    return Outcome(handler()) if handler else Outcome("enter does nothing here", noop=True)


def _escape(screen: Screen, ui: Ui) -> Outcome:
    if ui.app and find(screen.root, f"ad.{ui.app}") is not None and screen.drift.ads.get(ui.app) == "modal":
        ui.dismissed.add(ui.app)
        return Outcome("closed the promotion")
    forms = [k for k in ("files.mode", "mail.mode", "calendar.mode") if ui.view.get(k)]
    if not forms and not ui.focus:
        return Outcome("nothing to close", noop=True)
    for key in forms:
        ui.view[key] = ""
    ui.focus = ""
    return Outcome("closed the form" if forms else "left the field")


def scroll(screen: Screen, ui: Ui, direction: str, amount: int, target: str | None) -> Outcome:
    key = screen.keys.get(target, "") if target is not None else SCROLLABLE.get(ui.app, "")
    if key not in SCROLLABLE.values() and key != "files.tree":
        raise ops.OpError(f"{(target or ui.app or 'the desktop')[:60]!r} does not scroll; lists do")
    before = ui.scroll.get(key, 0)
    ui.scroll[key] = max(0, min(screen.max_scroll.get(key, MAX_SCROLL), before + (amount if direction == "down" else -amount)))
    return Outcome(f"scrolled {key} to row {ui.scroll[key]}", noop=ui.scroll[key] == before)


def drag(screen: Screen, data: AppData, ui: Ui, source: tuple[int, int], target: tuple[int, int]) -> Outcome:
    if ui.app != "files":
        raise ops.OpError("drag and drop moves files; open the file manager")
    (_, grabbed), (_, dropped) = control_at(screen, *source), control_at(screen, *target)
    if grabbed[0] == "ad" or dropped[0] == "ad":
        return Outcome("a promotion is in the way", ad=True, noop=True)
    return Outcome(files.drop(grabbed, dropped, data, ui))
