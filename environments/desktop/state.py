"""The desktop's state as plain data: what the apps hold (`AppData`) and what the screen shows (`Ui`).

Both the GUI and the shell change `AppData` only through environments.desktop.ops, so a task can be done
either way and graded on the same final state. Everything here is picklable and JSON-able (`state_json`),
which is what snapshots, the state hash and the grader read.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

APPS = ("files", "mail", "calendar", "settings", "shop", "table")
HOME = "/home/user"


@dataclass
class Mail:
    id: str
    folder: str  # inbox | sent
    sender: str
    to: str
    subject: str
    body: str
    in_reply_to: str = ""


@dataclass
class CalEvent:
    id: str
    title: str
    date: str  # YYYY-MM-DD
    time: str  # HH:MM


@dataclass(frozen=True)
class Product:
    id: str
    name: str
    category: str
    price_cents: int
    rating: float  # 1.0 .. 5.0, one decimal

    @property
    def price(self) -> str:
        return f"${self.price_cents / 100:.2f}"


@dataclass(frozen=True)
class Setting:
    """One row of the settings app: a toggle ("on"/"off") or a choice among `choices`."""

    key: str  # section.name, e.g. "privacy.location"
    label: str
    choices: tuple[str, ...] = ("on", "off")

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]


SETTINGS = (
    Setting("display.theme", "Theme", ("light", "dark", "high-contrast")),
    Setting("display.font_size", "Font size", ("small", "medium", "large")),
    Setting("privacy.location", "Location services"),
    Setting("privacy.analytics", "Share usage analytics"),
    Setting("notifications.sound", "Notification sounds"),
    Setting("notifications.digest", "Email digest", ("daily", "weekly", "never")),
)
SETTING_BY_KEY = {s.key: s for s in SETTINGS}


@dataclass
class AppData:
    user: str
    files: dict[str, str]  # absolute path -> text
    dirs: set[str]  # absolute directory paths, HOME and its ancestors included
    mails: list[Mail]
    events: list[CalEvent]
    settings: dict[str, str]
    catalog: list[Product]
    orders: list[str] = field(default_factory=list)  # product ids, in purchase order
    next_id: int = 1  # for sent mails and new events


@dataclass
class Ui:
    """What is on screen: the open app, its view, the focused field and typed text, scroll offsets, ads dismissed.

    Field and view keys are the apps' semantic control keys (not widget ids, which drift renames)."""

    app: str = ""
    focus: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    view: dict[str, str] = field(default_factory=dict)
    scroll: dict[str, int] = field(default_factory=dict)
    select_all: bool = False  # ctrl+a: the next type replaces the focused field
    dismissed: set[str] = field(default_factory=set)  # apps whose ad was closed
    opened_at: dict[str, int] = field(default_factory=dict)  # tick an app was last opened (toasts fade after it)
    table: list[list[str]] | None = None  # the table editor's unsaved rows
    tick: int = 0


def state_json(data: AppData, ui: Ui) -> str:
    """Both halves in one deterministic string (sets sorted): part of what state_hash covers."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (set, frozenset)):
            return sorted(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return json.dumps({"data": plain(data), "ui": plain(ui)}, sort_keys=True, separators=(",", ":"))
