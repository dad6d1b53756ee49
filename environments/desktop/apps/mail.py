"""Mail: inbox and sent folders, a reading pane, and a compose form that Reply pre-fills.

Intents: ("folder", name), ("read", mail id), ("compose",), ("reply",), ("send",), ("discard",).
"""

from __future__ import annotations

import environments.desktop.ops as ops
from environments.desktop.layout import ROW_H, Intent, Screen, ad_overlay, frame, split, visible_rows
from environments.desktop.state import AppData, Ui

FIELDS = ("mail.to", "mail.subject", "mail.body")


def view(s: Screen, data: AppData) -> None:
    ui = s.ui
    folder = ui.view.get("mail.folder", "inbox")
    window, toolbar, content = frame(s, "mail", folder.title())
    x, y = toolbar.bounds[:2]
    s.buttons(toolbar, [("mail.compose", "Compose", ("compose",)), ("mail.reply", "Reply", ("reply",))], (x + 8, y + 4))
    side, main = split(s, "mail", content, 420)
    sx, sy, sw, sh = side
    tabs = s.add(window, "mail.folders", "tablist", "Folders", (sx, sy, sw, 32))
    for i, name in enumerate(("inbox", "sent")):
        s.add(
            tabs,
            f"mail.folder.{name}",
            "tab",
            name.title(),
            (sx + 8 + i * 110, sy + 4, 100, 24),
            intent=("folder", name),
            states=("selected",) if name == folder else (),
        )
    rect = (sx + 4, sy + 40, sw - 8, sh - 44)
    listing = s.add(window, "mail.list", "list", "Messages", rect)
    mails = [m for m in data.mails if m.folder == folder]
    for mail, row in visible_rows(s, "mail.list", mails, rect, ROW_H + 8):
        who = mail.sender if folder == "inbox" else f"to {mail.to}"
        s.add(
            listing,
            f"mail.item.{mail.id}",
            "listitem",
            f"{who}: {mail.subject}",
            row,
            intent=("read", mail.id),
            states=("selected",) if ui.view.get("mail.open") == mail.id else (),
        )
    mx, my, mw, mh = main
    if ui.view.get("mail.mode") == "compose":
        form = s.add(window, "mail.form", "group", "New message", (mx + 8, my + 8, mw - 16, mh - 16))
        for i, (key, label) in enumerate(zip(FIELDS, ("To", "Subject", "Message"), strict=True)):
            s.textbox(form, key, label, (mx + 16, my + 16 + i * 44, mw - 32, 36 if i < 2 else 240))
        s.buttons(form, [("mail.send", "Send", ("send",)), ("mail.discard", "Discard", ("discard",))], (mx + 16, my + 400))
    elif (opened := next((m for m in data.mails if m.id == ui.view.get("mail.open")), None)) is not None:
        pane = s.add(window, "mail.message", "group", opened.subject, (mx + 8, my + 8, mw - 16, mh - 16))
        s.add(pane, "mail.message.from", "text", f"From: {opened.sender}", (mx + 16, my + 16, mw - 32, 24))
        s.add(pane, "mail.message.subject", "text", f"Subject: {opened.subject}", (mx + 16, my + 44, mw - 32, 24))
        s.add(pane, "mail.message.body", "text", opened.body, (mx + 16, my + 80, mw - 32, 200))
    ad_overlay(s, window, toolbar, "mail")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb = intent[0]
    if verb == "folder":
        ui.view.update({"mail.folder": intent[1], "mail.open": ""})
        ui.scroll["mail.list"] = 0
        return f"showing {intent[1]}"
    if verb == "read":
        ui.view.update({"mail.open": intent[1], "mail.mode": ""})
        return f"opened message {intent[1]}"
    if verb == "compose":
        ui.view.update({"mail.mode": "compose", "mail.reply_to": ""})
        ui.fields.update(dict.fromkeys(FIELDS, ""))
        ui.focus = "mail.to"
        return "composing a new message"
    if verb == "reply":
        if not ui.view.get("mail.open"):
            raise ops.OpError("open a message first")
        original = ops.mail_get(data, ui.view["mail.open"])
        ui.view.update({"mail.mode": "compose", "mail.reply_to": original.id})
        ui.fields.update({"mail.to": original.sender, "mail.subject": f"Re: {original.subject}", "mail.body": ""})
        ui.focus = "mail.body"
        return f"replying to {original.sender}"
    if verb == "send":
        fields = ui.fields
        mail = ops.mail_send(
            data,
            fields.get("mail.to", "").strip(),
            fields.get("mail.subject", ""),
            fields.get("mail.body", ""),
            ui.view.get("mail.reply_to", ""),
        )
        ui.view.update({"mail.mode": "", "mail.folder": "sent", "mail.open": mail.id, "mail.reply_to": ""})
        ui.focus = ""
        return f"sent {mail.id} to {mail.to}"
    if verb == "discard":
        ui.view["mail.mode"], ui.focus = "", ""
        return "discarded the draft"
    raise ops.OpError(f"mail has no action {verb!r}")
