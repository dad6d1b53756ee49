"""Icons drawn from primitives (rectangles, polygons, lines, ellipses), so the desktop ships no image files.

    draw_icon(draw, "folder", (x0, y0, x1, y1))     # fills the largest square centred in the box

Each icon is a small function of a square (left, top, side); the set is `ICONS`. An unknown name draws a plain
tile, so a new app icon never breaks a screenshot. Shapes are sized in fractions of the side, so icons stay
crisp at any render scale.
"""

from __future__ import annotations

from collections.abc import Callable

from PIL import ImageDraw

Square = tuple[float, float, float]  # left, top, side
_INK = "#2d3748"


def _at(sq: Square, fx0: float, fy0: float, fx1: float, fy1: float) -> tuple[float, float, float, float]:
    """A rectangle given in fractions of the square."""
    x, y, s = sq
    return (x + fx0 * s, y + fy0 * s, x + fx1 * s, y + fy1 * s)


def _pts(sq: Square, *fractions: tuple[float, float]) -> list[tuple[float, float]]:
    x, y, s = sq
    return [(x + fx * s, y + fy * s) for fx, fy in fractions]


def _folder(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.polygon(
        _pts(sq, (0.08, 0.22), (0.4, 0.22), (0.48, 0.32), (0.92, 0.32), (0.92, 0.82), (0.08, 0.82)), fill="#e0a526", outline="#9c6f0e"
    )
    d.rectangle(_at(sq, 0.08, 0.4, 0.92, 0.82), fill="#f6c244", outline="#9c6f0e")


def _file(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.polygon(_pts(sq, (0.2, 0.08), (0.62, 0.08), (0.8, 0.26), (0.8, 0.92), (0.2, 0.92)), fill="#ffffff", outline="#4a5568")
    d.polygon(_pts(sq, (0.62, 0.08), (0.62, 0.26), (0.8, 0.26)), fill="#cbd5e0", outline="#4a5568")
    for fy in (0.42, 0.56, 0.7):
        d.line(_pts(sq, (0.3, fy), (0.7, fy)), fill="#a0aec0", width=max(1, round(sq[2] / 24)))


def _mail(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.rectangle(_at(sq, 0.08, 0.22, 0.92, 0.78), fill="#ebf8ff", outline="#2b6cb0", width=max(1, round(sq[2] / 20)))
    d.line(_pts(sq, (0.08, 0.22), (0.5, 0.55), (0.92, 0.22)), fill="#2b6cb0", width=max(1, round(sq[2] / 16)))


def _calendar(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.rectangle(_at(sq, 0.12, 0.16, 0.88, 0.9), fill="#ffffff", outline="#4a5568")
    d.rectangle(_at(sq, 0.12, 0.16, 0.88, 0.36), fill="#e53e3e")
    for fx in (0.3, 0.7):
        d.rectangle(_at(sq, fx - 0.03, 0.08, fx + 0.03, 0.24), fill=_INK)
    for row in range(3):
        for col in range(4):
            fx, fy = 0.2 + col * 0.17, 0.45 + row * 0.14
            d.rectangle(_at(sq, fx, fy, fx + 0.09, fy + 0.08), fill="#a0aec0")


def _gear(d: ImageDraw.ImageDraw, sq: Square) -> None:
    x, y, s = sq
    cx, cy = x + s / 2, y + s / 2
    d.regular_polygon((cx, cy, 0.42 * s), 8, fill="#718096")
    d.regular_polygon((cx, cy, 0.42 * s), 8, rotation=22.5, fill="#718096")
    d.ellipse((cx - 0.3 * s, cy - 0.3 * s, cx + 0.3 * s, cy + 0.3 * s), fill="#a0aec0")
    d.ellipse((cx - 0.12 * s, cy - 0.12 * s, cx + 0.12 * s, cy + 0.12 * s), fill="#f7fafc")


def _cart(d: ImageDraw.ImageDraw, sq: Square) -> None:
    width = max(1, round(sq[2] / 14))
    d.line(_pts(sq, (0.06, 0.18), (0.2, 0.18), (0.32, 0.66), (0.82, 0.66)), fill=_INK, width=width)
    d.polygon(_pts(sq, (0.24, 0.28), (0.92, 0.28), (0.84, 0.56), (0.3, 0.56)), fill="#48bb78", outline=_INK)
    for fx in (0.38, 0.76):
        d.ellipse(_at(sq, fx - 0.07, 0.74, fx + 0.07, 0.88), fill=_INK)


def _terminal(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.rectangle(_at(sq, 0.06, 0.14, 0.94, 0.86), fill="#1a202c", outline="#4a5568")
    width = max(1, round(sq[2] / 14))
    d.line(_pts(sq, (0.2, 0.34), (0.36, 0.48), (0.2, 0.62)), fill="#68d391", width=width)
    d.line(_pts(sq, (0.44, 0.64), (0.7, 0.64)), fill="#68d391", width=width)


def _trash(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.rectangle(_at(sq, 0.16, 0.18, 0.84, 0.28), fill="#718096")
    d.rectangle(_at(sq, 0.4, 0.1, 0.6, 0.18), fill="#718096")
    d.polygon(_pts(sq, (0.22, 0.3), (0.78, 0.3), (0.72, 0.92), (0.28, 0.92)), fill="#a0aec0", outline="#4a5568")


def _search(d: ImageDraw.ImageDraw, sq: Square) -> None:
    width = max(1, round(sq[2] / 10))
    d.ellipse(_at(sq, 0.14, 0.14, 0.62, 0.62), outline=_INK, width=width)
    d.line(_pts(sq, (0.56, 0.56), (0.86, 0.86)), fill=_INK, width=width)


def _star(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.polygon(
        _pts(
            sq,
            (0.5, 0.06),
            (0.62, 0.38),
            (0.95, 0.38),
            (0.68, 0.58),
            (0.78, 0.92),
            (0.5, 0.72),
            (0.22, 0.92),
            (0.32, 0.58),
            (0.05, 0.38),
            (0.38, 0.38),
        ),
        fill="#ecc94b",
        outline="#b7791f",
    )


def _user(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.ellipse(_at(sq, 0.32, 0.1, 0.68, 0.46), fill="#805ad5")
    d.pieslice(_at(sq, 0.14, 0.52, 0.86, 1.24), 180, 360, fill="#805ad5")


def _close(d: ImageDraw.ImageDraw, sq: Square) -> None:
    width = max(1, round(sq[2] / 8))
    d.line(_pts(sq, (0.25, 0.25), (0.75, 0.75)), fill=_INK, width=width)
    d.line(_pts(sq, (0.75, 0.25), (0.25, 0.75)), fill=_INK, width=width)


def _tile(d: ImageDraw.ImageDraw, sq: Square) -> None:
    d.rounded_rectangle(_at(sq, 0.1, 0.1, 0.9, 0.9), radius=max(1, sq[2] / 8), fill="#a0aec0", outline="#4a5568")


ICONS: dict[str, Callable[[ImageDraw.ImageDraw, Square], None]] = {
    "folder": _folder,
    "file": _file,
    "mail": _mail,
    "calendar": _calendar,
    "gear": _gear,
    "settings": _gear,
    "cart": _cart,
    "shop": _cart,
    "terminal": _terminal,
    "trash": _trash,
    "search": _search,
    "star": _star,
    "user": _user,
    "close": _close,
    "app": _tile,
}


def draw_icon(draw: ImageDraw.ImageDraw, name: str, box: tuple[float, float, float, float]) -> None:
    """The icon `name` in the largest square centred in `box` (x0, y0, x1, y1); an unknown name draws a tile."""
    x0, y0, x1, y1 = box
    side = min(x1 - x0, y1 - y0)
    if side < 4:
        return  # nothing legible fits
    square = (x0 + (x1 - x0 - side) / 2, y0 + (y1 - y0 - side) / 2, side)
    ICONS.get(name, _tile)(draw, square)
