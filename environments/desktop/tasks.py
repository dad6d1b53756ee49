"""Task templates: each draws a goal from the seeded desktop and writes its brief, its public goal (what the
brief says, as data anchors read) and its solution: the shortest known correct command-line path, discovery
included (`mail list` before replying to a message whose id the brief does not give). The solution is both
the oracle's plan and, applied to a copy of the starting desktop, the expected final state (grading.py).

    task = synthesize("reply-mail", data, seed)   # DesktopTask(key, brief, goals, solution)
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from environments.desktop.state import HOME, SETTINGS, AppData
from environments.desktop.world import CATEGORIES, PEOPLE, TABLE_STATUS

REPLIES = ("Sounds good, see you then.", "Thanks, I will take a look today.", "Yes, that works for me.", "Please send me the details.")
EVENT_TITLES = ("Project kickoff", "Vendor call", "Quarterly planning", "Coffee with Hana", "Design sync")


@dataclass(frozen=True)
class Part:
    goal: dict[str, Any]
    line: str  # the brief's sentence
    solution: tuple[str, ...]


@dataclass(frozen=True)
class DesktopTask:
    key: str
    brief: str
    goals: tuple[dict[str, Any], ...]
    solution: tuple[str, ...]


def move_files(data: AppData, rng: random.Random) -> Part:
    ext, dest = rng.choice(((".pdf", "Documents/Invoices"), (".jpg", "Pictures")))
    names = sorted(p.rsplit("/", 1)[1] for p in data.files if p.startswith(f"{HOME}/Downloads/") and p.endswith(ext))
    goal = {"kind": "move-files", "from": f"{HOME}/Downloads", "to": f"{HOME}/{dest}", "ext": ext, "names": names}
    return Part(goal, f"Move every {ext} file from ~/Downloads into ~/{dest}.", (f"mv ~/Downloads/*{ext} ~/{dest}".replace("~", HOME),))


def reply_mail(data: AppData, rng: random.Random) -> Part:
    mail = rng.choice([m for m in data.mails if m.folder == "inbox"])
    text = rng.choice(REPLIES)
    goal = {"kind": "reply-mail", "sender": mail.sender, "subject": mail.subject, "body": text}
    line = f'Reply to the mail from {mail.sender} about "{mail.subject}" with exactly this message: {text}'
    return Part(goal, line, ("mail list", f"mail reply {mail.id} --body {shlex.quote(text)}"))


def change_setting(data: AppData, rng: random.Random) -> Part:
    setting = rng.choice(SETTINGS)
    value = rng.choice([c for c in setting.choices if c != data.settings[setting.key]])
    goal = {"kind": "change-setting", "section": setting.section, "label": setting.label, "value": value}
    line = f'In the {setting.section} settings, set "{setting.label}" to {value}.'
    return Part(goal, line, ("settings list", f"settings set {setting.key} {value}"))


def edit_cell(data: AppData, rng: random.Random) -> Part:
    path = f"{HOME}/Documents/budget.csv"
    rows = [line.split(",") for line in data.files[path].splitlines()[1:]]
    row = rng.choice(rows)
    column, current = rng.choice((("amount", row[2]), ("status", row[3]), ("owner", row[1])))
    choices = {"amount": [str(n * 100) for n in range(1, 91)], "status": list(TABLE_STATUS), "owner": list(PEOPLE)}[column]
    value = rng.choice([c for c in choices if c != current])
    goal = {"kind": "edit-cell", "path": path, "row": row[0], "column": column, "value": value}
    line = f"In ~/Documents/budget.csv, set the {column} of the {row[0]} row to {value} and save the file."
    return Part(goal, line, (f"table set {path} {row[0]} {column} {value}",))


def schedule_event(data: AppData, rng: random.Random) -> Part:
    title, date, time = (
        rng.choice(EVENT_TITLES),
        f"2026-12-{rng.randint(1, 28):02d}",
        f"{rng.randint(8, 17):02d}:{rng.choice(('00', '30'))}",
    )
    goal = {"kind": "schedule-event", "title": title, "date": date, "time": time}
    return Part(
        goal,
        f'Add the calendar event "{title}" on {date} at {time}.',
        (f"cal add --title {shlex.quote(title)} --date {date} --time {time}",),
    )


def buy_cheapest(data: AppData, rng: random.Random) -> Part:
    """Constraints drawn until exactly one product is the cheapest that meets them (a tie would be ambiguous)."""
    for _ in range(50):
        category, min_rating, cap = rng.choice(list(CATEGORIES)), rng.choice((3.5, 4.0, 4.5)), rng.choice((100, 150, 200))
        fits = sorted(
            (p for p in data.catalog if p.category == category and p.rating >= min_rating and p.price_cents < cap * 100),
            key=lambda p: p.price_cents,
        )
        if fits and (len(fits) == 1 or fits[0].price_cents < fits[1].price_cents):
            goal = {"kind": "buy-cheapest", "category": category, "min_rating": min_rating, "max_price": cap}
            line = f"Buy exactly one item: the cheapest {category} rated at least {min_rating} that costs under ${cap}."
            return Part(goal, line, (f"shop search --category {category} --sort price", f"shop buy {fits[0].id}"))
    raise AssertionError("no unambiguous shopping goal in 50 draws")


Template = Callable[[AppData, random.Random], Part]
TEMPLATES: dict[str, tuple[str, tuple[Template, ...]]] = {
    # key: (split, the parts composed)
    "move-files": ("train", (move_files,)),
    "reply-mail": ("train", (reply_mail,)),
    "change-setting": ("train", (change_setting,)),
    "edit-cell": ("dev", (edit_cell,)),
    "schedule-event": ("dev", (schedule_event,)),
    "buy-cheapest": ("test", (buy_cheapest,)),
    "errand": ("test", (move_files, change_setting, reply_mail)),
}


def synthesize(key: str, data: AppData, seed: int) -> DesktopTask:
    rng = random.Random(f"desktop-task-{key}-{seed}")
    parts = [template(data, rng) for template in TEMPLATES[key][1]]
    brief = (
        "You are at a desktop (1280x800) with the apps Files, Mail, Calendar, Settings, Shop and Table editor. "
        "Use the GUI tools (observe, click, type, key, scroll, drag, open_app, wait) or the shell tool over the same data; "
        "call submit when done. Task: " + " ".join(p.line for p in parts)
    )
    return DesktopTask(key, brief, tuple(p.goal for p in parts), tuple(c for p in parts for c in p.solution))
