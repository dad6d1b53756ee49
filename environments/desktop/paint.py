"""How each role looks: one painter per role, `(pen, widget, box, active) -> None`, used by render.py.

A painter draws its widget inside `box` (x0, y0, x1, y1 in the pen's pixels, already scaled), never its
children; `active` says whether the window it sits in has the focus (an inactive title bar is grey). Colours
come from the role, then the widget's states, then its `style` hints, which win.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw

from environments.desktop.icons import draw_icon
from environments.desktop.text import draw_text, line_height, text_length
from environments.desktop.widgets import Widget

Box = tuple[int, int, int, int]  # x0, y0, x1, y1: x1 and y1 just outside
INK, MUTED, ACCENT, LINE, PAPER, FACE = "#1a202c", "#a0aec0", "#3182ce", "#cbd5e0", "#ffffff", "#edf2f7"
_TITLE_H = 26  # a window's own title bar, when the tree gives it no titlebar child


@dataclass
class Pen:
    """Where painting goes: an image and the render scale (sizes in paint calls are at scale 1)."""

    image: Image.Image
    scale: float
    draw: ImageDraw.ImageDraw = field(init=False)

    def __post_init__(self) -> None:
        self.draw = ImageDraw.Draw(self.image)

    def size(self, size: float) -> int:
        """A font size in pixels at this scale (6 px at least: smaller is not text any more)."""
        return max(6, round(size * self.scale))

    def px(self, n: float) -> int:
        return max(1, round(n * self.scale))

    def text(self, xy: tuple[float, float], text: str, *, face: str = "sans", size: float = 13, fill: str = INK) -> None:
        draw_text(self.image, xy, text, face=face, size=self.size(size), fill=fill)

    def length(self, text: str, *, face: str = "sans", size: float = 13) -> float:
        return text_length(face, self.size(size), text)

    @contextlib.contextmanager
    def clipped(self, area: Box) -> Iterator[Pen]:
        """A pen over a copy of `area` (its own origin at the area's corner), put back afterwards: what is
        drawn through it cannot reach outside the area."""
        sub = Pen(self.image.crop(area), self.scale)
        yield sub
        self.image.paste(sub.image, area[:2])


def _style(widget: Widget, key: str, default: Any) -> Any:
    return widget.style.get(key, default)


def fit(pen: Pen, text: str, width: float, *, face: str, size: float, tail: bool = False) -> str:
    """`text` cut (with an ellipsis) to at most `width` pixels: its head, or with `tail` its end."""
    if pen.length(text, face=face, size=size) <= width:
        return text
    low, high = 0, len(text)
    while low < high:  # the most characters that still fit beside the ellipsis
        mid = (low + high + 1) // 2
        if pen.length("…" + text[-mid:] if tail else text[:mid] + "…", face=face, size=size) <= width:
            low = mid
        else:
            high = mid - 1
    if low == 0:
        return "…" if pen.length("…", face=face, size=size) <= width else ""
    return "…" + text[-low:] if tail else text[:low] + "…"


def label(
    pen: Pen,
    box: Box,
    text: str,
    *,
    face: str = "sans",
    size: float = 13,
    fill: str = INK,
    align: str = "left",
    pad: float = 6,
    tail: bool = False,
) -> float:
    """One line of text centred vertically in `box`, cut to its width; answers the x where the text ends."""
    x0, y0, x1, y1 = box
    margin = pen.px(pad)
    shown = fit(pen, text, x1 - x0 - 2 * margin, face=face, size=size, tail=tail) if text else ""
    length = pen.length(shown, face=face, size=size)
    height = line_height(face, pen.size(size))
    x = {"center": x0 + (x1 - x0 - length) / 2, "right": x1 - margin - length}.get(align, x0 + margin)
    y = y0 + (y1 - y0 - height) / 2
    if not shown:
        return x
    if height > y1 - y0:  # a line taller than its box: cut it at the box's edges
        with pen.clipped(box) as sub:
            sub.text((x - x0, y - y0), shown, face=face, size=size, fill=fill)
    else:
        pen.text((x, y), shown, face=face, size=size, fill=fill)
    return x + length


def lines(pen: Pen, box: Box, text: str, *, face: str = "sans", size: float = 13, fill: str = INK, pad: float = 6) -> None:
    """Text with line breaks, top-aligned; each line cut to the width, and lines that do not fit whole are left out."""
    x0, y0, x1, y1 = box
    margin = pen.px(pad)
    height = line_height(face, pen.size(size))
    y = y0 + margin
    for line in text.split("\n"):
        if y + height > y1:
            break
        pen.text((x0 + margin, y), fit(pen, line, x1 - x0 - 2 * margin, face=face, size=size), face=face, size=size, fill=fill)
        y += height + pen.px(2)


def _text_style(widget: Widget, *, size: float = 13, color: str = INK) -> dict[str, Any]:
    face = "mono" if _style(widget, "mono", False) else "bold" if _style(widget, "bold", False) else "sans"
    return {"face": face, "size": _style(widget, "size", size), "fill": _style(widget, "color", color)}


def _fill(pen: Pen, widget: Widget, box: Box, fill: str, border: str | None = LINE, width: float = 1) -> None:
    outline = _style(widget, "border", border)
    pen.draw.rectangle(
        (box[0], box[1], box[2] - 1, box[3] - 1), fill=_style(widget, "fill", fill), outline=outline, width=pen.px(width) if outline else 0
    )


def _icon_then_label(pen: Pen, widget: Widget, box: Box, text: str, **style: Any) -> None:
    """The style's icon in a square at the left edge (when it has one), then the text beside it."""
    icon = _style(widget, "icon", "")
    if icon:
        side = box[3] - box[1] - pen.px(6)
        draw_icon(pen.draw, icon, (box[0] + pen.px(4), box[1] + pen.px(3), box[0] + pen.px(4) + side, box[3] - pen.px(3)))
        box = (box[0] + side + pen.px(4), *box[1:])
    label(pen, box, text, **style)


def desktop(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    _fill(pen, widget, box, "#2c5282", border=None)


def window(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    """A window or dialog: a framed pane; its own title bar unless the tree gives it a titlebar child."""
    border = ACCENT if active else "#718096"
    _fill(pen, widget, box, "#f7fafc", border=border, width=2 if widget.role == "dialog" else 1)
    if not any(child.role == "titlebar" for child in widget.children):
        titlebar(pen, widget, (box[0], box[1], box[2], min(box[3], box[1] + pen.px(_TITLE_H))), active)


def titlebar(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    pen.draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=_style(widget, "fill", "#2b6cb0" if active else "#a0aec0"))
    _icon_then_label(pen, widget, box, widget.name, face="bold", size=13, fill=_style(widget, "color", PAPER))


def button(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    primary, disabled = _style(widget, "primary", False), "disabled" in widget.states
    fill = "#e2e8f0" if disabled else ACCENT if primary else "#f7fafc"
    outline = ACCENT if "focused" in widget.states else _style(widget, "border", "#a0aec0")
    pen.draw.rounded_rectangle(
        (box[0], box[1], box[2] - 1, box[3] - 1),
        radius=pen.px(4),
        fill=_style(widget, "fill", fill),
        outline=outline,
        width=pen.px(2 if "focused" in widget.states else 1),
    )
    color = MUTED if disabled else PAPER if primary else INK
    _icon_then_label(pen, widget, box, widget.name, align="center", **_text_style(widget, color=color))


def textbox(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    """A field: its value, or its name as a grey placeholder; focused, a blue frame and a caret after the text,
    which then shows its end (where typing goes) rather than its start."""
    focused = "focused" in widget.states
    _fill(pen, widget, box, PAPER, border=ACCENT if focused else "#a0aec0", width=2 if focused else 1)
    style = _text_style(widget) if widget.value else {**_text_style(widget), "fill": MUTED}
    if "\n" in widget.value:
        lines(pen, box, widget.value, **_text_style(widget))
        return
    end = label(pen, box, widget.value or widget.name, tail=focused, **style)
    if focused:
        x = min(end + 1 if widget.value else box[0] + pen.px(6), box[2] - pen.px(3))
        pen.draw.line((x, box[1] + pen.px(4), x, box[3] - pen.px(5)), fill=INK, width=pen.px(1))


def link(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    style = _text_style(widget, color="#2b6cb0")
    end = label(pen, box, widget.name, pad=2, **style)
    y = (box[1] + box[3] + line_height(style["face"], pen.size(style["size"]))) // 2
    pen.draw.line((box[0] + pen.px(2), y, end, y), fill=style["fill"], width=pen.px(1))


def panel(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    _fill(pen, widget, box, PAPER)


def item(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    """A list item or menu item: highlighted when selected, framed when focused; its value right-aligned."""
    selected = "selected" in widget.states
    if selected or "focused" in widget.states or "fill" in widget.style:
        fill = _style(widget, "fill", ACCENT if selected else "#bee3f8")
        pen.draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=fill)
    color = PAPER if selected else MUTED if "disabled" in widget.states else INK
    style = _text_style(widget, color=color)
    if widget.value:
        label(pen, box, widget.value, align="right", **{**style, "fill": PAPER if selected else "#718096"})
        box = (box[0], box[1], box[2] - round(pen.length(widget.value, face=style["face"], size=style["size"])) - pen.px(12), box[3])
    _icon_then_label(pen, widget, box, widget.name, **style)


def checkbox(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    side = min(box[3] - box[1] - pen.px(4), pen.px(14))
    x, y = box[0] + pen.px(2), box[1] + (box[3] - box[1] - side) // 2
    checked = "checked" in widget.states
    pen.draw.rectangle((x, y, x + side, y + side), fill=ACCENT if checked else PAPER, outline="#4a5568", width=pen.px(1))
    if checked:
        tick = [(x + side * 0.2, y + side * 0.5), (x + side * 0.42, y + side * 0.75), (x + side * 0.8, y + side * 0.25)]
        pen.draw.line(tick, fill=PAPER, width=pen.px(2))
    if "focused" in widget.states:
        pen.draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=ACCENT, width=pen.px(1))
    label(pen, (x + side, box[1], box[2], box[3]), widget.name, **_text_style(widget, color=MUTED if "disabled" in widget.states else INK))


def tablist(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    _fill(pen, widget, box, FACE, border=None)
    pen.draw.line((box[0], box[3] - 1, box[2] - 1, box[3] - 1), fill=LINE, width=pen.px(1))


def tab(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    selected = "selected" in widget.states
    pen.draw.rectangle(
        (box[0], box[1], box[2] - 1, box[3] - (0 if selected else 1)),
        fill=_style(widget, "fill", PAPER if selected else "#e2e8f0"),
        outline=LINE,
    )
    if selected:
        pen.draw.line((box[0], box[1], box[2] - 1, box[1]), fill=ACCENT, width=pen.px(2))
    _icon_then_label(pen, widget, box, widget.name, align="center", **{**_text_style(widget), "face": "bold" if selected else "sans"})


def row(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    header, selected = _style(widget, "header", False), "selected" in widget.states
    fill = FACE if header else "#bee3f8" if selected else _style(widget, "fill", PAPER)
    pen.draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=fill)
    pen.draw.line((box[0], box[3] - 1, box[2] - 1, box[3] - 1), fill="#e2e8f0", width=pen.px(1))
    if not widget.children:
        label(pen, box, widget.name, **_text_style(widget))


def cell(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    pen.draw.line((box[2] - 1, box[1], box[2] - 1, box[3] - 1), fill="#e2e8f0", width=pen.px(1))
    label(pen, box, widget.value or widget.name, align=_style(widget, "align", "left"), **_text_style(widget))


def image(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    _fill(pen, widget, box, "#e2e8f0")
    draw_icon(pen.draw, _style(widget, "icon", "app"), box)


def text(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    content = widget.value or widget.name
    if "fill" in widget.style:
        _fill(pen, widget, box, "", border=None)
    if "\n" in content:
        lines(pen, box, content, pad=2, **_text_style(widget))
    else:
        label(pen, box, content, pad=2, align=_style(widget, "align", "left"), **_text_style(widget))


def banner(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    """A promotion: loud on purpose (it covers controls), with an AD tag in its corner when it is one."""
    _fill(pen, widget, box, "#fefcbf", border="#dd6b20", width=3)
    tag = ""
    if "ad" in widget.states:
        tag = "AD"
        tag_w = round(pen.length(tag, face="bold", size=10)) + pen.px(8)
        pen.draw.rectangle((box[2] - tag_w - pen.px(3), box[1] + pen.px(3), box[2] - pen.px(3), box[1] + pen.px(17)), fill="#dd6b20")
        pen.text((box[2] - tag_w + pen.px(4), box[1] + pen.px(4)), tag, face="bold", size=10, fill=PAPER)
    _icon_then_label(pen, widget, box, widget.name, align="center", **{**_text_style(widget, size=16, color="#c53030"), "face": "bold"})


def group(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    if "fill" in widget.style or "border" in widget.style:
        _fill(pen, widget, box, "", border=None)


def scrollbar(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    _fill(pen, widget, box, FACE, border=None)
    start, length = _style(widget, "thumb", (0.0, 0.3))
    vertical = box[3] - box[1] >= box[2] - box[0]
    lo, hi = (box[1], box[3]) if vertical else (box[0], box[2])
    a, b = lo + (hi - lo) * start, lo + (hi - lo) * min(1.0, start + length)
    thumb = (box[0] + 2, a, box[2] - 3, b) if vertical else (a, box[1] + 2, b, box[3] - 3)
    pen.draw.rounded_rectangle(thumb, radius=pen.px(3), fill=MUTED)


def icon(pen: Pen, widget: Widget, box: Box, active: bool) -> None:
    """A desktop or toolbar icon: the picture in the top square, its name under it when there is room."""
    x0, y0, x1, y1 = box
    side = min(x1 - x0, y1 - y0)
    if "selected" in widget.states:
        pen.draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill="#90cdf4")
    draw_icon(pen.draw, _style(widget, "icon", "app"), (x0 + (x1 - x0 - side) // 2, y0, x0 + (x1 - x0 + side) // 2, y0 + side))
    if y1 - y0 - side >= pen.px(12) and widget.name:
        label(pen, (x0, y0 + side, x1, y1), widget.name, align="center", pad=1, **_text_style(widget, size=11))
