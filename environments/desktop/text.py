"""Text for the renderer: the vendored DejaVu faces, and lines of text set from cached glyph masks.

    draw_text(image, (x, y), "Inbox", face="bold", size=13, fill="#ffffff")   # (x, y): the line's top-left
    text_length("sans", 13, "Inbox")                                          # its advance, in pixels

FreeType rasterises a glyph in tens of microseconds, and a screen shows a few thousand of them, so each glyph
is rasterised once per (face, pixel size) and a line is set by placing glyph masks at rounded advances; set
lines are cached too, since most text repeats from one step to the next. Lines are set without kerning (the
basic layout, one glyph after another), which a desktop's short labels do not miss, and the result depends
only on the font files here and the Pillow build.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = Path(__file__).with_name("fonts")
FACES = {"sans": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}

_Glyph = tuple[Image.Image | None, int, int, float]  # mask (None: blank), left, top, advance
_Line = tuple[Image.Image | None, int, int, float]  # mask (None: blank), left, top, length


@functools.lru_cache(maxsize=64)
def font(face: str, size: int) -> ImageFont.FreeTypeFont:
    """A vendored face at a pixel size; loading a face costs more than painting a screen, so it is cached."""
    assert face in FACES, f"unknown face {face!r}; the renderer ships {sorted(FACES)}"
    return ImageFont.truetype(str(FONT_DIR / FACES[face]), size, layout_engine=ImageFont.Layout.BASIC)


def line_height(face: str, size: int) -> int:
    return sum(font(face, size).getmetrics())


@functools.lru_cache(maxsize=8192)
def _glyph(face: str, size: int, char: str) -> _Glyph:
    f = font(face, size)
    x0, y0, x1, y1 = f.getbbox(char)
    left, top, right, bottom = math.floor(x0), math.floor(y0), math.ceil(x1), math.ceil(y1)
    advance = f.getlength(char)
    if right <= left or bottom <= top:
        return None, 0, 0, advance
    mask = Image.new("L", (right - left, bottom - top), 0)
    ImageDraw.Draw(mask).text((-left, -top), char, font=f, fill=255)
    return mask, left, top, advance


@functools.lru_cache(maxsize=16384)
def _line(face: str, size: int, text: str) -> _Line:
    """The mask of a whole line, and where its corner sits relative to the line's top-left."""
    placed: list[tuple[Image.Image, int, int]] = []
    pen = 0.0
    for char in text:
        mask, left, top, advance = _glyph(face, size, char)
        if mask is not None:
            placed.append((mask, round(pen) + left, top))
        pen += advance
    if not placed:
        return None, 0, 0, pen
    x0, y0 = min(x for _, x, _ in placed), min(y for _, _, y in placed)
    x1, y1 = max(x + m.width for m, x, _ in placed), max(y + m.height for m, _, y in placed)
    line = Image.new("L", (x1 - x0, y1 - y0), 0)
    for mask, x, y in placed:
        line.paste(mask, (x - x0, y - y0), mask)  # overlapping edges keep the darker coverage, near enough
    return line, x0, y0, pen


def text_length(face: str, size: int, text: str) -> float:
    """How far `text` advances, in pixels, as draw_text sets it."""
    return _line(face, size, text)[3]


def draw_text(image: Image.Image, xy: tuple[float, float], text: str, *, face: str, size: int, fill: str) -> None:
    """`text` on one line, its top-left at `xy` (rounded to whole pixels); what falls off the image is cut."""
    mask, left, top, _ = _line(face, size, text)
    if mask is not None:
        image.paste(fill, (round(xy[0]) + left, round(xy[1]) + top), mask)
