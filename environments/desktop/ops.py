"""Every change to the apps' data, shared by the GUI and the shell so both paths reach the same final state.

Each operation validates its input and raises OpError with a message naming the offending value; callers turn
it into an error result. Paths are confined to the user's home: `resolve` normalises `.` and `..` and refuses
anything that ends up outside it, so no input reaches above /home/user (and nothing here touches the host).
"""

from __future__ import annotations

import re

from environments.desktop.state import HOME, SETTING_BY_KEY, AppData, CalEvent, Mail, Product

MAX_PATH = 200
MAX_FILE = 20_000  # characters in one file
MAX_FILES = 400
_PATH_CHARS = re.compile(r"[A-Za-z0-9._\-/ ]*")
_DATE, _TIME = re.compile(r"2026-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"), re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")
_ADDRESS = re.compile(r"[a-z0-9._-]{1,40}@[a-z0-9.-]{1,40}")


class OpError(Exception):
    pass


def resolve(path: str, cwd: str = HOME) -> str:
    if path == "~" or path.startswith("~/"):
        path = HOME + path[1:]
    if not path or len(path) > MAX_PATH:
        raise OpError(f"path: {len(path)} characters; give 1 to {MAX_PATH}")
    if not _PATH_CHARS.fullmatch(path):
        raise OpError(f"path {path[:60]!r}: only letters, digits, space and . _ - / are allowed")
    parts: list[str] = []
    for part in (path if path.startswith("/") else f"{cwd}/{path}").split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part and part != ".":
            parts.append(part)
    absolute = "/" + "/".join(parts)
    if absolute != HOME and not absolute.startswith(HOME + "/"):
        raise OpError(f"path {path[:60]!r} is outside {HOME}")
    return absolute


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def list_dir(data: AppData, path: str) -> tuple[list[str], list[str]]:
    """(sub-directory names, file names) of a directory, each sorted."""
    if path not in data.dirs:
        raise OpError(f"{path}: no such directory")
    dirs = sorted(d.rsplit("/", 1)[1] for d in data.dirs if parent(d) == path and d != path)
    return dirs, sorted(f.rsplit("/", 1)[1] for f in data.files if parent(f) == path)


def read(data: AppData, path: str) -> str:
    if path not in data.files:
        raise OpError(f"{path}: no such file" + (" (it is a directory)" if path in data.dirs else ""))
    return data.files[path]


def write(data: AppData, path: str, text: str) -> None:
    if path in data.dirs or parent(path) not in data.dirs:
        raise OpError(f"{path}: not a writable file path (its folder must exist)")
    if len(text) > MAX_FILE:
        raise OpError(f"{path}: {len(text)} characters, at most {MAX_FILE}")
    if path not in data.files and len(data.files) >= MAX_FILES:
        raise OpError(f"at most {MAX_FILES} files")
    data.files[path] = text


def mkdir(data: AppData, path: str) -> None:
    if path in data.dirs or path in data.files or parent(path) not in data.dirs:
        raise OpError(f"{path}: exists already or its parent folder is missing")
    data.dirs.add(path)


def _target(data: AppData, src: str, dst: str) -> str:
    target = f"{dst}/{src.rsplit('/', 1)[1]}" if dst in data.dirs else dst
    if target in data.files or target in data.dirs:
        raise OpError(f"{target}: exists already; nothing is overwritten")
    if parent(target) not in data.dirs:
        raise OpError(f"{parent(target)}: no such directory")
    return target


def move(data: AppData, src: str, dst: str) -> str:
    """Move a file or folder; into `dst` when it is a folder. Returns the new path."""
    if src not in data.files and (src not in data.dirs or src == HOME):
        raise OpError(f"{src}: no such file or folder")
    target = _target(data, src, dst)
    if src in data.dirs:
        if target.startswith(src + "/"):
            raise OpError(f"{src}: cannot move a folder into itself")
        data.dirs = {target + d[len(src) :] if d == src or d.startswith(src + "/") else d for d in data.dirs}
        data.files = {(target + f[len(src) :] if f.startswith(src + "/") else f): t for f, t in data.files.items()}
    else:
        data.files[target] = data.files.pop(src)
    return target


def copy(data: AppData, src: str, dst: str) -> str:
    text = read(data, src)
    target = _target(data, src, dst)
    write(data, target, text)
    return target


def mail_send(data: AppData, to: str, subject: str, body: str, in_reply_to: str = "") -> Mail:
    if not _ADDRESS.fullmatch(to):
        raise OpError(f"to: {to[:60]!r} is not an address like bob@example.org")
    if not subject.strip() or len(subject) > 120 or len(body) > 2000:
        raise OpError("subject: 1 to 120 characters; body: at most 2000")
    mail = Mail(f"m{data.next_id}", "sent", f"{data.user}@example.org", to, subject, body, in_reply_to)
    data.next_id += 1
    data.mails.append(mail)
    return mail


def mail_get(data: AppData, mail_id: str) -> Mail:
    found = next((m for m in data.mails if m.id == mail_id), None)
    if found is None:
        raise OpError(f"mail {mail_id[:20]!r}: no such message; `mail list` shows them")
    return found


def mail_reply(data: AppData, mail_id: str, body: str) -> Mail:
    original = mail_get(data, mail_id)
    subject = original.subject if original.subject.startswith("Re: ") else f"Re: {original.subject}"
    return mail_send(data, original.sender, subject, body, in_reply_to=original.id)


def setting_set(data: AppData, key: str, value: str) -> None:
    setting = SETTING_BY_KEY.get(key)
    if setting is None:
        raise OpError(f"setting {key[:40]!r}: unknown; one of {', '.join(SETTING_BY_KEY)}")
    if value not in setting.choices:
        raise OpError(f"{key}: {value[:40]!r} is not one of {', '.join(setting.choices)}")
    data.settings[key] = value


def shop_search(data: AppData, query: str = "", category: str = "", max_cents: int | None = None) -> list[Product]:
    words = query.lower().split()
    return [
        p
        for p in data.catalog
        if all(w in p.name.lower() for w in words)
        and (not category or p.category == category)
        and (max_cents is None or p.price_cents <= max_cents)
    ]


def shop_buy(data: AppData, product_id: str) -> Product:
    product = next((p for p in data.catalog if p.id == product_id), None)
    if product is None:
        raise OpError(f"product {product_id[:20]!r}: not in the catalogue")
    if len(data.orders) >= 20:
        raise OpError("at most 20 orders per session")
    data.orders.append(product.id)
    return product


def event_add(data: AppData, title: str, date: str, time: str) -> CalEvent:
    if not title.strip() or len(title) > 80:
        raise OpError("title: 1 to 80 characters")
    if not _DATE.fullmatch(date) or not _TIME.fullmatch(time):
        raise OpError(f"date {date[:20]!r} / time {time[:10]!r}: expected YYYY-MM-DD in 2026 and HH:MM")
    event = CalEvent(f"e{data.next_id}", title.strip(), date, time)
    data.next_id += 1
    data.events.append(event)
    return event


def table_rows(text: str) -> list[list[str]]:
    """A simple CSV (no quoting: cells hold no commas) as rows of cells."""
    return [line.split(",") for line in text.splitlines() if line]


def table_text(rows: list[list[str]]) -> str:
    return "".join(",".join(row) + "\n" for row in rows)


def table_set(data: AppData, path: str, row_key: str, column: str, value: str) -> None:
    """Set the cell of the row whose first cell is `row_key`, in the column headed `column`."""
    rows = table_rows(read(data, path))
    if "," in value or len(value) > 60:
        raise OpError(f"value {value[:40]!r}: at most 60 characters and no commas")
    if not rows or column not in rows[0]:
        raise OpError(f"{path}: no column {column[:40]!r}")
    row = next((r for r in rows[1:] if r and r[0] == row_key), None)
    if row is None:
        raise OpError(f"{path}: no row {row_key[:40]!r}")
    row[rows[0].index(column)] = value
    write(data, path, table_text(rows))
