"""Building one frame of the screen: the widget tree plus what each control does.

`Screen.add` creates a widget under a parent from a semantic key ("mail.reply"); the drift decides its id and
name (version 2 renames), and the control's intent (what a click on it does, e.g. ("mail.reply",)) is kept
beside the tree in `intents`, keyed by widget id, so the tree stays plain accessibility data. `frame` draws
an app's window (title bar, toolbar at the top or, in version 2, at the bottom) and returns where content goes;
`split` the sidebar/main areas (variant B mirrors them); `visible_rows` applies a list's scroll offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from environments.desktop.drift import TOAST_TICKS, Drift
from environments.desktop.state import Ui
from environments.desktop.widgets import SCREEN_HEIGHT, SCREEN_WIDTH, Widget

Intent = tuple[str, ...]
Rect = tuple[int, int, int, int]
T = TypeVar("T")

WINDOW: Rect = (40, 30, 1200, 720)
TASKBAR: Rect = (0, SCREEN_HEIGHT - 40, SCREEN_WIDTH, 40)
BAR_H, ROW_H, BUTTON_W = 36, 28, 120
APP_TITLES = {"files": "Files", "mail": "Mail", "calendar": "Calendar", "settings": "Settings", "shop": "Shop", "table": "Table editor"}


class Screen:
    def __init__(self, drift: Drift, ui: Ui, seed: int = 0) -> None:
        self.drift, self.ui, self.seed = drift, ui, seed
        self.root = Widget("desktop", "desktop", "Desktop", (0, 0, SCREEN_WIDTH, SCREEN_HEIGHT))
        self.intents: dict[str, Intent] = {"desktop": ("noop",)}
        self.keys: dict[str, str] = {}  # widget id -> semantic key
        self.max_scroll: dict[str, int] = {}  # list key -> the furthest its offset can go (scrolling stops there)

    def add(
        self,
        parent: Widget,
        key: str,
        role: str,
        name: str = "",
        bounds: Rect = (0, 0, 0, 0),
        *,
        intent: Intent | None = None,
        value: str = "",
        states: Sequence[str] = (),
        style: dict[str, Any] | None = None,
    ) -> Widget:
        widget_id, name = self.drift.control(key, name)
        flags = set(states) | ({"focused"} if self.ui.focus == key else set())
        widget = Widget(widget_id, role, name, bounds, value, frozenset(flags), [], style or {})
        parent.children.append(widget)
        self.keys[widget_id] = key
        if intent is not None:
            self.intents[widget_id] = intent
        return widget

    def textbox(self, parent: Widget, key: str, name: str, bounds: Rect) -> Widget:
        return self.add(
            parent, key, "textbox", name, bounds, intent=("focus", key), value=self.ui.fields.get(key, ""), states=("editable",)
        )

    def buttons(self, parent: Widget, specs: Sequence[tuple[str, str, Intent]], origin: tuple[int, int], width: int = BUTTON_W) -> None:
        x, y = origin
        for key, name, intent in specs:
            self.add(parent, key, "button", name, (x, y, width - 8, BAR_H - 8), intent=intent)
            x += width


def frame(s: Screen, app: str, subtitle: str = "") -> tuple[Widget, Widget, Rect]:
    """The app's window: (window, toolbar, content rect). Version 2 moves the toolbar to the bottom."""
    x, y, w, h = WINDOW
    title = APP_TITLES[app] + (f" - {subtitle}" if subtitle else "")
    window = s.add(s.root, f"{app}.window", "window", title, WINDOW, intent=("noop",), style={"fill": "#ffffff"})
    bar = s.add(window, f"{app}.titlebar", "titlebar", title, (x, y, w, 28), style={"fill": "#2b6cb0"})
    s.add(bar, f"{app}.close", "button", "Close window", (x + w - 32, y + 2, 28, 24), intent=("close",))
    top = s.drift.versions.get(app, 1) == 1
    bar_y = y + 28 if top else y + h - BAR_H
    toolbar = s.add(window, f"{app}.toolbar", "group", "Toolbar", (x, bar_y, w, BAR_H), style={"fill": "#edf2f7"})
    content_y = y + 28 + (BAR_H if top else 0)
    return window, toolbar, (x, content_y, w, h - 28 - BAR_H)


def split(s: Screen, app: str, rect: Rect, side_w: int = 240) -> tuple[Rect, Rect]:
    """(sidebar, main) inside `rect`; variant B puts the sidebar on the right."""
    x, y, w, h = rect
    if s.drift.variants.get(app, "A") == "B":
        return (x + w - side_w, y, side_w, h), (x, y, w - side_w, h)
    return (x, y, side_w, h), (x + side_w, y, w - side_w, h)


def visible_rows(s: Screen, key: str, items: Sequence[T], rect: Rect, row_h: int = ROW_H) -> list[tuple[T, Rect]]:
    """The items a list of height rect[3] shows at its scroll offset, each with its row rect (variant B lists
    in reverse order). The offset is clamped so a list never scrolls past its end."""
    app = key.split(".", 1)[0]
    ordered = list(reversed(items)) if s.drift.variants.get(app, "A") == "B" else list(items)
    capacity = max(1, rect[3] // row_h)
    s.max_scroll[key] = max(0, len(ordered) - capacity)
    offset = min(s.ui.scroll.get(key, 0), s.max_scroll[key])
    x, y, w, _ = rect
    return [(item, (x, y + i * row_h, w, row_h - 2)) for i, item in enumerate(ordered[offset : offset + capacity])]


def ad_overlay(s: Screen, window: Widget, toolbar: Widget, app: str) -> None:
    """The app's promotion, painted last so it covers what lies under it, until closed (or, a toast, faded)."""
    kind = s.drift.ads.get(app)
    if kind is None or app in s.ui.dismissed:
        return
    if kind == "toast" and s.ui.tick - s.ui.opened_at.get(app, 0) >= TOAST_TICKS:
        return
    x, y, w, h = window.bounds
    bounds = {
        "modal": (x + w // 2 - 260, y + h // 2 - 160, 520, 320),
        "banner": toolbar.bounds,
        "toast": (x + w - 380, y + h - 140, 360, 120),
    }[kind]
    ad = s.add(window, f"ad.{app}", "dialog", "Special offer", bounds, intent=("ad", app), states=("ad",), style={"fill": "#fefcbf"})
    bx, by, bw, bh = bounds
    s.add(ad, f"ad.{app}.text", "text", "Upgrade to Premium today: 50% off!", (bx + 10, by + 4, bw - 150, min(bh - 8, 28)), states=("ad",))
    close = "No thanks" if s.drift.versions.get(app, 1) == 2 else "Close ad"
    s.add(ad, f"ad.{app}.close", "button", close, (bx + bw - 130, by + 4, 120, min(bh - 8, 28)), intent=("dismiss", app), states=("ad",))


def taskbar(s: Screen) -> None:
    bar = s.add(s.root, "taskbar", "group", "Taskbar", TASKBAR, style={"fill": "#1a202c"})
    for i, app in enumerate(s.drift.launcher):
        states = ("selected",) if s.ui.app == app else ()
        s.add(bar, f"launch.{app}", "button", APP_TITLES[app], (8 + i * 150, TASKBAR[1] + 4, 140, 32), intent=("open", app), states=states)
