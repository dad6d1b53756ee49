"""The apps' command-line faces, over the same data the GUI shows (environments.desktop.ops does the work).

mail list [inbox|sent] | mail read ID | mail send --to ADDR --subject S --body B | mail reply ID --body B
settings list | settings get KEY | settings set KEY VALUE
shop search [WORDS...] [--category C] [--max-price DOLLARS] [--sort price] | shop buy ID | shop orders
cal list | cal add --title T --date YYYY-MM-DD --time HH:MM
table get FILE | table set FILE ROW COLUMN VALUE
"""

from __future__ import annotations

from collections.abc import Callable

import environments.desktop.ops as ops
from environments.desktop.state import HOME, SETTINGS, AppData, Ui

Command = Callable[[AppData, Ui, list[str]], str]


def options(args: list[str], allowed: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """(positional words, {--name: value}); every --name takes one value."""
    positional, named, i = [], {}, 0
    while i < len(args):
        if args[i].startswith("--"):
            if args[i] not in allowed or i + 1 >= len(args):
                raise ops.OpError(f"option {args[i][:30]!r}: expected one of {', '.join(allowed)} followed by a value")
            named[args[i]] = args[i + 1]
            i += 2
        else:
            positional.append(args[i])
            i += 1
    return positional, named


def _usage(args: list[str], verbs: dict[str, int], usage: str) -> str:
    if not args or args[0] not in verbs or len(args) - 1 < verbs[args[0]]:
        raise ops.OpError(f"usage: {usage}")
    return args[0]


def _mail(data: AppData, ui: Ui, args: list[str]) -> str:
    verb = _usage(
        args,
        {"list": 0, "read": 1, "send": 0, "reply": 1},
        "mail list [inbox|sent] | read ID | send --to --subject --body | reply ID --body",
    )
    if verb == "list":
        folder = args[1] if len(args) > 1 else "inbox"
        if folder not in ("inbox", "sent"):
            raise ops.OpError(f"folder {folder[:20]!r}: inbox or sent")
        return "\n".join(f"{m.id}\t{m.sender if folder == 'inbox' else m.to}\t{m.subject}" for m in data.mails if m.folder == folder)
    if verb == "read":
        m = ops.mail_get(data, args[1])
        return f"From: {m.sender}\nTo: {m.to}\nSubject: {m.subject}\n\n{m.body}"
    if verb == "send":
        _, named = options(args[1:], ("--to", "--subject", "--body"))
        sent = ops.mail_send(data, named.get("--to", ""), named.get("--subject", ""), named.get("--body", ""))
        return f"sent {sent.id} to {sent.to}"
    positional, named = options(args[1:], ("--body",))
    sent = ops.mail_reply(data, positional[0] if positional else "", named.get("--body", ""))
    return f"sent {sent.id} to {sent.to}: {sent.subject}"


def _settings(data: AppData, ui: Ui, args: list[str]) -> str:
    verb = _usage(args, {"list": 0, "get": 1, "set": 2}, "settings list | get KEY | set KEY VALUE")
    if verb == "list":
        return "\n".join(f"{s.key}={data.settings[s.key]}\t{s.label}\t({'|'.join(s.choices)})" for s in SETTINGS)
    if verb == "get":
        if args[1] not in data.settings:
            raise ops.OpError(f"setting {args[1][:40]!r}: unknown; `settings list` shows them")
        return data.settings[args[1]]
    ops.setting_set(data, args[1], args[2])
    return f"{args[1]}={args[2]}"


def _shop(data: AppData, ui: Ui, args: list[str]) -> str:
    verb = _usage(
        args, {"search": 0, "buy": 1, "orders": 0}, "shop search [WORDS] [--category C] [--max-price N] [--sort price] | buy ID | orders"
    )
    if verb == "buy":
        product = ops.shop_buy(data, args[1])
        return f"bought {product.id} {product.name} for {product.price}"
    if verb == "orders":
        return "\n".join(data.orders)
    words, named = options(args[1:], ("--category", "--max-price", "--sort"))
    try:
        cap = round(float(named["--max-price"]) * 100) if "--max-price" in named else None
    except ValueError:
        raise ops.OpError(f"--max-price {named['--max-price'][:20]!r}: expected dollars like 49.99") from None
    found = ops.shop_search(data, " ".join(words), named.get("--category", ""), cap)
    if named.get("--sort") == "price":
        found.sort(key=lambda p: (p.price_cents, p.id))
    return "\n".join(f"{p.id}\t{p.name}\t{p.category}\t{p.price}\trating {p.rating:.1f}" for p in found)


def _cal(data: AppData, ui: Ui, args: list[str]) -> str:
    verb = _usage(args, {"list": 0, "add": 0}, "cal list | add --title T --date YYYY-MM-DD --time HH:MM")
    if verb == "list":
        return "\n".join(f"{e.id}\t{e.date} {e.time}\t{e.title}" for e in sorted(data.events, key=lambda e: (e.date, e.time, e.id)))
    _, named = options(args[1:], ("--title", "--date", "--time"))
    event = ops.event_add(data, named.get("--title", ""), named.get("--date", ""), named.get("--time", ""))
    return f"added {event.id} {event.title} on {event.date} at {event.time}"


def _table(data: AppData, ui: Ui, args: list[str]) -> str:
    verb = _usage(args, {"get": 1, "set": 4}, "table get FILE | table set FILE ROW COLUMN VALUE")
    path = ops.resolve(args[1], ui.view.get("shell.cwd", HOME))
    if verb == "get":
        return "\n".join(" | ".join(row) for row in ops.table_rows(ops.read(data, path)))
    ops.table_set(data, path, args[2], args[3], args[4])
    return f"{path}: {args[2]}.{args[3]} = {args[4]}"


APP_COMMANDS: dict[str, Command] = {"mail": _mail, "settings": _settings, "shop": _shop, "cal": _cal, "table": _table}
