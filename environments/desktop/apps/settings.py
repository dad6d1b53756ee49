"""Settings: a tab per section; toggles are checkboxes, choices a row of buttons. Changes apply at once.

Intents: ("section", name), ("toggle", key), ("choose", key, value).
"""

from __future__ import annotations

import environments.desktop.ops as ops
from environments.desktop.layout import Intent, Screen, ad_overlay, frame
from environments.desktop.state import SETTINGS, AppData, Ui

SECTIONS = ("display", "privacy", "notifications")


def view(s: Screen, data: AppData) -> None:
    section = s.ui.view.get("settings.section", "display")
    window, toolbar, content = frame(s, "settings", section.title())
    x, y = toolbar.bounds[:2]
    tabs = s.add(toolbar, "settings.tabs", "tablist", "Sections", toolbar.bounds)
    for i, name in enumerate(SECTIONS):
        s.add(
            tabs,
            f"settings.tab.{name}",
            "tab",
            name.title(),
            (x + 8 + i * 170, y + 4, 160, 28),
            intent=("section", name),
            states=("selected",) if name == section else (),
        )
    cx, cy, cw, _ = content
    group = s.add(window, f"settings.{section}", "group", section.title(), (cx + 8, cy + 8, cw - 16, 400))
    for i, setting in enumerate(st for st in SETTINGS if st.section == section):
        top, value = cy + 20 + i * 64, data.settings[setting.key]
        if setting.choices == ("on", "off"):
            s.add(
                group,
                f"settings.{setting.key}",
                "checkbox",
                setting.label,
                (cx + 24, top, 400, 32),
                intent=("toggle", setting.key),
                states=("checked",) if value == "on" else (),
            )
            continue
        s.add(group, f"settings.{setting.key}.label", "text", setting.label, (cx + 24, top, 240, 32))
        for j, choice in enumerate(setting.choices):
            s.add(
                group,
                f"settings.{setting.key}.{choice}",
                "button",
                choice,
                (cx + 280 + j * 150, top, 140, 32),
                intent=("choose", setting.key, choice),
                states=("selected",) if value == choice else (),
            )
    ad_overlay(s, window, toolbar, "settings")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb = intent[0]
    if verb == "section":
        ui.view["settings.section"] = intent[1]
        return f"showing {intent[1]} settings"
    if verb == "toggle":
        value = "off" if data.settings[intent[1]] == "on" else "on"
        ops.setting_set(data, intent[1], value)
        return f"{intent[1]} is {value}"
    if verb == "choose":
        ops.setting_set(data, intent[1], intent[2])
        return f"{intent[1]} is {intent[2]}"
    raise ops.OpError(f"settings has no action {verb!r}")
