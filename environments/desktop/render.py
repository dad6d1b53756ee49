"""Pixels for a widget tree: `render_png(root)` paints what `widgets.py` describes, as a vision policy sees it.

    png = render_png(env.screen())                     # 1280 x 800 PNG bytes
    png = render_png(root, scale=0.5, marks=True)      # 640 x 400, each clickable widget outlined with its id

Painting follows `walk`'s order (parents first, later siblings on top), skips hidden subtrees, and clips every
widget to its ancestors' boxes, so nothing spills out of a window or a list. Text is cut to its box with an
ellipsis (a focused field shows its tail instead, with the caret). The fonts are the DejaVu faces vendored in
fonts/, loaded with Pillow's basic layout engine, so the pixels do not depend on the host's fonts or on libraqm:
the same tree gives the same bytes for a given Pillow build (the replay chain hashes the tree, not these bytes).

Paint hints a widget's `style` may carry (all optional): fill, border, color (text), icon (icons.ICONS), bold,
size (font px at scale 1), mono, align ("left" | "center" | "right"), primary (a button), header (a row),
thumb ([start, length] fractions of a scrollbar).
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from PIL import Image

from environments.desktop import paint
from environments.desktop.paint import Box, Pen
from environments.desktop.text import line_height
from environments.desktop.widgets import SCREEN_HEIGHT, SCREEN_WIDTH, Widget

# Widgets a vision policy may act on: the ones the set-of-marks overlay labels with their ids.
MARKED_ROLES = frozenset({"button", "textbox", "link", "listitem", "menuitem", "checkbox", "tab", "row", "icon", "banner"})
# Opaque panes: a clickable widget whose centre a later one covers is not marked (it cannot be clicked there).
COVER_ROLES = frozenset({"window", "dialog", "banner", "menu", "list", "table", "textbox", "image"})
_MARK_COLOURS = ("#e53e3e", "#dd6b20", "#38a169", "#3182ce", "#805ad5", "#d53f8c")
# Run-length zlib at level 1: a flat UI's rows are long runs, so this encodes a screen about twice as fast as
# Pillow's default (measured: 73 vs 166 ms on this loaded 2-core host) for a file about 25% larger.
_PNG_OPTIONS = {"compress_level": 1, "compress_type": zlib.Z_RLE}


def render_image(root: Widget, *, scale: float = 1.0, marks: bool = False) -> Image.Image:
    """The tree painted on an RGB image of the root's size (the 1280 x 800 screen when it has none) times `scale`."""
    if not 0.1 <= scale <= 4:
        raise ValueError(f"scale must be between 0.1 and 4, got {scale!r}")
    width, height = root.bounds[2] or SCREEN_WIDTH, root.bounds[3] or SCREEN_HEIGHT
    image = Image.new("RGB", (max(1, round(width * scale)), max(1, round(height * scale))), "#000000")
    seen = _Seen()
    if root.visible:
        _paint(Pen(image, scale), root, (0, 0, *image.size), active=True, seen=seen)
    if marks and seen.marked:
        # Painted again with each mark drawn right after its widget, so that later panes cover marks as they
        # cover widgets; only widgets left clickable by the first pass are marked. Costs one more paint.
        chosen = {id(widget): n for n, (widget, _) in enumerate(seen.unoccluded())}
        _paint(Pen(image, scale), root, (0, 0, *image.size), active=True, seen=_Seen(to_mark=chosen))
    return image


def render_png(root: Widget, *, scale: float = 1.0, marks: bool = False) -> bytes:
    """PNG bytes of `render_image`; `marks` draws the set-of-marks overlay (off by default)."""
    buffer = io.BytesIO()
    render_image(root, scale=scale, marks=marks).save(buffer, "PNG", **_PNG_OPTIONS)
    return buffer.getvalue()


def render_overlay(root: Widget, *, scale: float = 1.0) -> bytes:
    """The screenshot with every clickable widget outlined and labelled with its id (for vision policies)."""
    return render_png(root, scale=scale, marks=True)


def _box(pen: Pen, widget: Widget) -> Box:
    x, y, w, h = widget.bounds
    s = pen.scale
    return (round(x * s), round(y * s), round((x + w) * s), round((y + h) * s))


def _intersect(a: Box, b: Box) -> Box | None:
    box = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    return box if box[0] < box[2] and box[1] < box[3] else None


@dataclass
class _Seen:
    """What painting left visible, for the overlay: each clickable widget's visible box with the paint-order
    span of its subtree, and the opaque panes (`COVER_ROLES`) in paint order."""

    order: int = 0
    marked: list[tuple[Widget, Box, int]] = field(default_factory=list)  # widget, visible box, last order in its subtree
    covers: list[tuple[int, Box]] = field(default_factory=list)
    to_mark: dict[int, int] = field(default_factory=dict)  # id(widget) -> its mark's number, for the marking pass

    def unoccluded(self) -> list[tuple[Widget, Box]]:
        """Marked widgets whose centre no later pane (a dialog, a banner, another window) covers."""

        def covered(box: Box, after: int) -> bool:
            cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2
            return any(n > after and c[0] <= cx < c[2] and c[1] <= cy < c[3] for n, c in self.covers)

        return [(widget, box) for widget, box, last in self.marked if not covered(box, last)]


def _paint(pen: Pen, widget: Widget, clip: Box, *, active: bool, seen: _Seen) -> None:
    box = _box(pen, widget)
    shown = _intersect(box, clip)
    if shown is None:
        return  # entirely outside its ancestors: neither it nor its children show
    if widget.role in ("window", "dialog"):
        active = "focused" in widget.states or widget.role == "dialog"
    painter = _PAINTERS.get(widget.role, paint.group)
    if shown == box:
        painter(pen, widget, box, active)
    else:  # partly hidden: paint on a copy of the visible part only, then put it back
        with pen.clipped(shown) as sub:
            painter(sub, widget, (box[0] - shown[0], box[1] - shown[1], box[2] - shown[0], box[3] - shown[1]), active)
    seen.order += 1
    if widget.role in COVER_ROLES:
        seen.covers.append((seen.order, shown))
    mark = len(seen.marked)
    if widget.role in MARKED_ROLES:
        seen.marked.append((widget, shown, 0))
    for child in widget.children:
        if child.visible:
            _paint(pen, child, shown, active=active, seen=seen)
    if widget.role in MARKED_ROLES:
        seen.marked[mark] = (widget, shown, seen.order)
    if (number := seen.to_mark.get(id(widget))) is not None:
        _mark(pen, widget, shown, number)


def _mark(pen: Pen, widget: Widget, box: Box, number: int) -> None:
    """Outline a clickable widget and label it with its id, top-left, on a solid tag that stays on screen."""
    x0, y0, x1, y1 = box
    width, height = pen.image.size
    colour = _MARK_COLOURS[number % len(_MARK_COLOURS)]
    pen.draw.rectangle((x0, y0, x1 - 1, y1 - 1), outline=colour, width=max(1, round(pen.scale * 2)))
    text_w = round(pen.length(widget.id, face="bold", size=10)) + 4
    text_h = line_height("bold", pen.size(10)) + 2
    lx, ly = min(x0, max(0, width - text_w)), min(y0, max(0, height - text_h))
    pen.draw.rectangle((lx, ly, lx + text_w, ly + text_h), fill=colour)
    pen.text((lx + 2, ly + 1), widget.id, face="bold", size=10, fill="#ffffff")


_PAINTERS: dict[str, Callable[[Pen, Widget, Box, bool], None]] = {
    "desktop": paint.desktop,
    "window": paint.window,
    "dialog": paint.window,
    "titlebar": paint.titlebar,
    "button": paint.button,
    "textbox": paint.textbox,
    "link": paint.link,
    "list": paint.panel,
    "menu": paint.panel,
    "table": paint.panel,
    "listitem": paint.item,
    "menuitem": paint.item,
    "checkbox": paint.checkbox,
    "tablist": paint.tablist,
    "tab": paint.tab,
    "row": paint.row,
    "cell": paint.cell,
    "image": paint.image,
    "text": paint.text,
    "banner": paint.banner,
    "group": paint.group,
    "scrollbar": paint.scrollbar,
    "icon": paint.icon,
}
