"""A seeded desktop: the user's files, inbox, calendar, settings and the shop's catalogue, all from one RNG.

    data = build_world(seed)     # AppData; the same seed gives the same desktop

Names, subjects and products come from small fixed vocabularies, so every value a task refers to is one an
agent can find on screen or through the shell.
"""

from __future__ import annotations

import random

from environments.desktop.state import HOME, SETTINGS, AppData, CalEvent, Mail, Product

PEOPLE = ("alice", "bob", "carol", "dmitri", "erin", "farah", "gus", "hana", "ivan", "jules")
SUBJECTS = (
    "Quarterly numbers",
    "Lunch on Friday",
    "Contract draft",
    "Server migration",
    "Team offsite",
    "Invoice question",
    "Design review",
    "Holiday schedule",
    "Printer broken",
    "New hire onboarding",
)
BODIES = (
    "Could you take a look when you have a minute?",
    "Let me know what you think.",
    "Is this still on track?",
    "Please confirm by tomorrow.",
    "Thanks for the quick turnaround last time.",
)
CATEGORIES = {
    "headphones": ("Arc", "Pulse", "Echo", "Nimbus", "Quill"),
    "keyboard": ("Typhoon", "Slate", "Cobalt", "Ember", "Fjord"),
    "mouse": ("Glide", "Pebble", "Orbit", "Comet", "Drift"),
    "lamp": ("Halo", "Beam", "Lumen", "Glow", "Spark"),
    "backpack": ("Trek", "Nomad", "Summit", "Harbor", "Atlas"),
}
TABLE_ITEMS = ("laptops", "monitors", "chairs", "licences", "travel", "training", "catering", "cloud")
TABLE_STATUS = ("draft", "approved", "pending", "rejected")
DIRS = ("Documents", "Documents/Invoices", "Documents/Reports", "Downloads", "Pictures", "Archive")


def _files(rng: random.Random) -> dict[str, str]:
    files: dict[str, str] = {}
    for n in rng.sample(range(100, 999), rng.randint(3, 5)):
        files[f"{HOME}/Downloads/invoice_{n}.pdf"] = f"%PDF invoice {n}\ntotal: {rng.randint(20, 900)}.00 EUR\n"
    for n in rng.sample(range(10, 99), rng.randint(2, 4)):
        files[f"{HOME}/Downloads/photo_{n}.jpg"] = f"JPEG photo {n}\n"
    for name in rng.sample(("notes", "todo", "ideas", "minutes"), 2):
        files[f"{HOME}/Downloads/{name}.txt"] = f"{name}: {rng.choice(BODIES)}\n"
    files[f"{HOME}/Documents/readme.txt"] = "Documents folder. Invoices go to Documents/Invoices.\n"
    files[f"{HOME}/Documents/Invoices/invoice_001.pdf"] = "%PDF invoice 001\ntotal: 120.00 EUR\n"
    rows = ["item,owner,amount,status"]
    for item in rng.sample(TABLE_ITEMS, 6):
        rows.append(f"{item},{rng.choice(PEOPLE)},{rng.randint(1, 90) * 100},{rng.choice(TABLE_STATUS)}")
    files[f"{HOME}/Documents/budget.csv"] = "\n".join(rows) + "\n"
    files[f"{HOME}/Documents/Reports/summary.txt"] = f"Summary: {rng.choice(BODIES)}\n"
    files[f"{HOME}/Pictures/holiday.jpg"] = "JPEG holiday\n"
    return files


def _mails(rng: random.Random, user: str) -> list[Mail]:
    senders = rng.sample(PEOPLE, 6)
    subjects = rng.sample(SUBJECTS, 6)
    return [
        Mail(f"m{i + 1}", "inbox", f"{s}@example.org", f"{user}@example.org", subject, rng.choice(BODIES))
        for i, (s, subject) in enumerate(zip(senders, subjects, strict=True))
    ]


def _catalog(rng: random.Random) -> list[Product]:
    products = []
    for category, names in CATEGORIES.items():
        for name in names:
            model = rng.randint(2, 9)
            products.append(Product("", f"{name} {model} {category}", category, rng.randint(15, 250) * 100 - 1, rng.randint(25, 50) / 10))
    rng.shuffle(products)
    return [Product(f"p{i + 1:02d}", p.name, p.category, p.price_cents, p.rating) for i, p in enumerate(products)]


def build_world(seed: int) -> AppData:
    rng = random.Random(f"desktop-world-{seed}")
    user = "user"
    dirs = {"/", "/home", HOME} | {f"{HOME}/{d}" for d in DIRS}
    events = [
        CalEvent(f"e{i + 1}", title, f"2026-12-{rng.randint(1, 28):02d}", f"{rng.randint(8, 17):02d}:00")
        for i, title in enumerate(rng.sample(("Standup", "1:1 with manager", "Dentist", "Budget review", "Gym"), 3))
    ]
    settings = {s.key: rng.choice(s.choices) for s in SETTINGS}
    mails = _mails(rng, user)
    return AppData(user, _files(rng), dirs, mails, events, settings, _catalog(rng), next_id=len(mails) + len(events) + 1)
