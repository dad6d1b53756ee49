"""How long a 1280 x 800 desktop screenshot takes to paint and encode, on one core.

    .venv/bin/python benchmarks/desktop_render.py [--repeat 200] [--marks] [--save busy.png]

The tree is busier than a typical step's: a mail window over a file manager, a table of 30 rows x 4 cells,
a list of 40 items, tabs, a dialog, a promotion banner, a terminal and a row of desktop icons. Prints the mean
and p95 of render_png (paint + PNG encode) and of the paint alone, in milliseconds of this process's CPU time
(on a host shared with other work the wall clock also counts waiting for the core; it is printed beside).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.desktop import text  # noqa: E402
from environments.desktop.render import render_image, render_png  # noqa: E402
from environments.desktop.widgets import Widget  # noqa: E402


def _w(id: str, role: str, bounds: tuple[int, int, int, int], name: str = "", **kw: object) -> Widget:
    return Widget(id=id, role=role, name=name, bounds=bounds, **kw)  # type: ignore[arg-type]


def busy_tree() -> Widget:
    icons = [
        _w(f"icon-{n}", "icon", (16, 16 + 90 * i, 72, 84), n.title(), style={"icon": n, "color": "#ffffff"})
        for i, n in enumerate(("folder", "mail", "calendar", "gear", "cart", "terminal", "trash"))
    ]
    items = [
        _w(
            f"file-{i}",
            "listitem",
            (110, 84 + 22 * i, 380, 22),
            f"report-{i:02d}.txt",
            value=f"{i * 3 + 1} kB",
            states=frozenset({"selected"}) if i == 4 else frozenset(),
            style={"icon": "folder" if i % 5 == 0 else "file"},
        )
        for i in range(40)
    ]
    files = _w(
        "files",
        "window",
        (100, 40, 420, 700),
        "Files",
        children=[
            _w("files-list", "list", (110, 84, 380, 640), children=items),
            _w("files-scroll", "scrollbar", (492, 84, 12, 640), style={"thumb": [0.1, 0.4]}),
        ],
    )
    header = _w(
        "mail-head",
        "row",
        (540, 150, 700, 22),
        style={"header": True},
        children=[
            _w(f"mail-h{c}", "cell", (540 + 175 * c, 150, 175, 22), value=t, style={"bold": True})
            for c, t in enumerate(("From", "Subject", "Date", "Size"))
        ],
    )
    rows = [
        _w(
            f"mail-{r}",
            "row",
            (540, 172 + 18 * r, 700, 18),
            states=frozenset({"selected"}) if r == 2 else frozenset(),
            children=[
                _w(f"mail-{r}-{c}", "cell", (540 + 175 * c, 172 + 18 * r, 175, 18), value=v, style={"size": 11})
                for c, v in enumerate(
                    (
                        f"sender{r}@example.org",
                        f"Quarterly numbers, part {r} of the long thread",
                        f"2026-11-{r % 28 + 1:02d}",
                        f"{r * 7} kB",
                    )
                )
            ],
        )
        for r in range(30)
    ]
    mail = _w(
        "mail",
        "window",
        (530, 60, 720, 720),
        "Mail — Inbox",
        states=frozenset({"focused"}),
        children=[
            _w("mail-title", "titlebar", (530, 60, 720, 28), "Mail — Inbox", style={"icon": "mail"}),
            _w(
                "mail-tabs",
                "tablist",
                (530, 88, 720, 28),
                children=[
                    _w(f"mail-tab-{t}", "tab", (530 + 110 * i, 88, 110, 28), t, states=frozenset({"selected"}) if i == 0 else frozenset())
                    for i, t in enumerate(("Inbox", "Sent", "Drafts", "Archive"))
                ],
            ),
            _w("mail-search", "textbox", (540, 122, 300, 24), "Search mail", value="quarterly", states=frozenset({"focused"})),
            _w("mail-compose", "button", (850, 122, 100, 24), "Compose", style={"primary": True, "icon": "mail"}),
            _w("mail-table", "table", (540, 150, 700, 560), children=[header, *rows]),
            _w("mail-unread", "checkbox", (960, 122, 140, 24), "Unread only", states=frozenset({"checked"})),
            _w("mail-help", "link", (1110, 122, 120, 24), "Keyboard help"),
        ],
    )
    dialog = _w(
        "confirm",
        "dialog",
        (420, 300, 360, 150),
        "Move 3 files?",
        children=[
            _w("confirm-text", "text", (430, 336, 340, 40), value="Move report-01.txt, report-02.txt\nand report-03.txt to Archive?"),
            _w("confirm-ok", "button", (560, 400, 100, 28), "Move", style={"primary": True}),
            _w("confirm-cancel", "button", (670, 400, 100, 28), "Cancel"),
        ],
    )
    ad = _w(
        "promo",
        "banner",
        (300, 730, 680, 56),
        "Spring sale: 40% off every plan, today only!",
        states=frozenset({"ad"}),
        style={"icon": "cart"},
    )
    terminal = _w("term", "textbox", (1000, 600, 270, 120), value="$ ls ~/reports\nreport-01.txt report-02.txt\n$ grep -l Q3 *.txt\nreport-02.txt",
                  style={"mono": True, "fill": "#1a202c", "color": "#68d391", "size": 11})  # fmt: skip
    return _w("desktop", "desktop", (0, 0, 1280, 800), children=[*icons, files, mail, dialog, ad, terminal])


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.fmean(ordered) * 1000, ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--marks", action="store_true", help="draw the set-of-marks overlay too")
    parser.add_argument("--save", default="", help="write one screenshot to this path")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the issue asks
    root = busy_tree()
    render_png(root, marks=args.marks)  # warm the font cache
    paint_s, full_s, wall_s = [], [], []
    for _ in range(args.repeat):
        start = time.process_time()
        render_image(root, marks=args.marks)
        middle, wall = time.process_time(), time.perf_counter()
        png = render_png(root, marks=args.marks)
        full_s.append(time.process_time() - middle)
        wall_s.append(time.perf_counter() - wall)
        paint_s.append(middle - start)
    fresh_s = []
    for _ in range(max(1, args.repeat // 4)):
        text._line.cache_clear()  # every line set anew: a step whose text all changed (glyphs stay cached)
        start = time.process_time()
        render_png(root, marks=args.marks)
        fresh_s.append(time.process_time() - start)
    if args.save:
        Path(args.save).write_bytes(png)
    (paint_mean, paint_p95), (full_mean, full_p95), (wall_mean, wall_p95) = _ms(paint_s), _ms(full_s), _ms(wall_s)
    print(
        f"1280x800 busy desktop, {args.repeat} renders, one core{' with marks' if args.marks else ''}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"paint only (CPU time)      mean {paint_mean:6.1f} ms   p95 {paint_p95:6.1f} ms")
    print(f"paint + PNG (CPU time)     mean {full_mean:6.1f} ms   p95 {full_p95:6.1f} ms   ({len(png) // 1024} KiB)")
    print("paint + PNG, all text new  mean {:6.1f} ms   p95 {:6.1f} ms".format(*_ms(fresh_s)))
    print(f"paint + PNG (wall clock)   mean {wall_mean:6.1f} ms   p95 {wall_p95:6.1f} ms")


if __name__ == "__main__":
    main()
