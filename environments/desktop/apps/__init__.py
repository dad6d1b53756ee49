"""The desktop's apps, each a module with `view(screen, data)` (its window as widgets, drawn from the state)
and `act(intent, data, ui) -> str` (what a click on one of its controls does); some also have `enter`
(the Enter key in their focused field) and `drop` (a drag inside the app).

    screen = build_screen(data, ui, drift, seed)   # the whole frame: open app, taskbar, intents per widget id
"""

from __future__ import annotations

from types import ModuleType

from environments.desktop.apps import calendar, files, mail, settings, shop, table
from environments.desktop.drift import Drift
from environments.desktop.layout import Screen, taskbar
from environments.desktop.state import AppData, Ui

MODULES: dict[str, ModuleType] = {"files": files, "mail": mail, "calendar": calendar, "settings": settings, "shop": shop, "table": table}


def build_screen(data: AppData, ui: Ui, drift: Drift, seed: int) -> Screen:
    s = Screen(drift, ui, seed)
    if not ui.app:
        s.add(s.root, "desktop.hint", "text", f"Welcome back, {data.user}. Open an app from the taskbar.", (440, 360, 400, 40))
    else:
        MODULES[ui.app].view(s, data)
    taskbar(s)
    return s
