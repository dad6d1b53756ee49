"""Calendar: the month's events in date order and a form for a new one.

Intents: ("new",), ("save",), ("cancel",).
"""

from __future__ import annotations

import environments.desktop.ops as ops
from environments.desktop.layout import Intent, Screen, ad_overlay, frame, visible_rows
from environments.desktop.state import AppData, Ui

FIELDS = ("calendar.title", "calendar.date", "calendar.time")


def view(s: Screen, data: AppData) -> None:
    window, toolbar, content = frame(s, "calendar", "December 2026")
    x, y = toolbar.bounds[:2]
    s.buttons(toolbar, [("calendar.new", "New event", ("new",))], (x + 8, y + 4))
    cx, cy, cw, ch = content
    rect = (cx + 8, cy + 8, cw // 2 - 16, ch - 16)
    listing = s.add(window, "calendar.list", "list", "Events", rect)
    events = sorted(data.events, key=lambda e: (e.date, e.time, e.id))
    for event, row in visible_rows(s, "calendar.list", events, rect, 32):
        s.add(listing, f"calendar.event.{event.id}", "listitem", f"{event.date} {event.time} {event.title}", row)
    if s.ui.view.get("calendar.mode") == "new":
        fx = cx + cw // 2
        form = s.add(window, "calendar.form", "group", "New event", (fx, cy + 8, cw // 2 - 8, 260))
        for i, (key, label) in enumerate(zip(FIELDS, ("Title", "Date (YYYY-MM-DD)", "Time (HH:MM)"), strict=True)):
            s.textbox(form, key, label, (fx + 8, cy + 20 + i * 48, cw // 2 - 24, 36))
        s.buttons(form, [("calendar.save", "Save", ("save",)), ("calendar.cancel", "Cancel", ("cancel",))], (fx + 8, cy + 170))
    ad_overlay(s, window, toolbar, "calendar")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb = intent[0]
    if verb == "new":
        ui.view["calendar.mode"], ui.focus = "new", "calendar.title"
        ui.fields.update(dict.fromkeys(FIELDS, ""))
        return "the new-event form is open"
    if verb == "save":
        if ui.view.get("calendar.mode") != "new":
            raise ops.OpError("open the new-event form first")
        title, date, time = (ui.fields.get(k, "").strip() for k in FIELDS)
        event = ops.event_add(data, title, date, time)
        ui.view["calendar.mode"], ui.focus = "", ""
        return f"added {event.title} on {event.date} at {event.time}"
    if verb == "cancel":
        ui.view["calendar.mode"], ui.focus = "", ""
        return "cancelled"
    raise ops.OpError(f"the calendar has no action {verb!r}")
