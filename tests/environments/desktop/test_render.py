"""The renderer paints what the widget tree says, and only that: sizes, determinism, hidden widgets, carets,
clipping, paint order, icons and the set-of-marks overlay, checked on pixel colours of hand-made trees."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image, ImageDraw

from environments.desktop import text
from environments.desktop.icons import ICONS, draw_icon
from environments.desktop.render import render_image, render_overlay, render_png
from environments.desktop.widgets import Widget

BACKGROUND = (44, 82, 130)  # the desktop's default fill, #2c5282
RED, INK, WHITE = (255, 0, 0), (26, 32, 44), (255, 255, 255)


def w(id: str, role: str, bounds: tuple[int, int, int, int], name: str = "", **kw: object) -> Widget:
    return Widget(id=id, role=role, name=name, bounds=bounds, **kw)  # type: ignore[arg-type]


def screen(*children: Widget) -> Widget:
    return w("desktop", "desktop", (0, 0, 1280, 800), children=list(children))


def pixels(root: Widget, **kw: object) -> Image.Image:
    return render_image(root, **kw)  # type: ignore[arg-type]


def box_colours(image: Image.Image, box: tuple[int, int, int, int]) -> set[Any]:
    return {c for _, c in image.crop(box).getcolors(maxcolors=1 << 22) or []}


def test_it_writes_a_png_of_the_screen_size_and_scales_it() -> None:
    root = screen(w("ok", "button", (10, 10, 80, 30), "OK"))
    full = Image.open(io.BytesIO(render_png(root)))
    half = Image.open(io.BytesIO(render_png(root, scale=0.5)))
    assert (full.format, full.size, full.mode) == ("PNG", (1280, 800), "RGB")
    assert half.size == (640, 400)
    with pytest.raises(ValueError, match="scale must be between 0.1 and 4, got 0"):
        render_png(root, scale=0)


def test_the_same_tree_gives_the_same_bytes_even_with_cold_text_caches() -> None:
    root = screen(w("win", "window", (50, 50, 400, 300), "Mail", children=[w("q", "textbox", (60, 90, 200, 24), "Search", value="hello")]))
    first = render_png(root)
    text._line.cache_clear()
    text._glyph.cache_clear()
    assert render_png(root) == first
    assert render_png(screen()) != first


def test_hidden_widgets_and_their_children_are_not_painted() -> None:
    child = w("inner", "button", (120, 120, 40, 20), "x", style={"fill": "#00ff00"})
    shown = pixels(screen(w("red", "group", (100, 100, 100, 60), style={"fill": "#ff0000"}, children=[child])))
    hidden = pixels(
        screen(w("red", "group", (100, 100, 100, 60), style={"fill": "#ff0000"}, states=frozenset({"hidden"}), children=[child]))
    )
    assert shown.getpixel((105, 105)) == RED and shown.getpixel((124, 124)) == (0, 255, 0)
    assert box_colours(hidden, (100, 100, 200, 160)) == {BACKGROUND}


def test_a_focused_textbox_shows_a_caret_after_its_text() -> None:
    def caret_columns(states: frozenset[str]) -> list[int]:
        image = pixels(screen(w("t", "textbox", (100, 100, 300, 30), value="abc", states=states)))
        # A caret is a column of ink through the middle of the field, where no glyph is that tall.
        return [x for x in range(102, 398) if all(image.getpixel((x, y)) == INK for y in range(106, 124))]

    focused = caret_columns(frozenset({"focused"}))
    assert len(focused) == 1 and 106 + text.text_length("sans", 13, "abc") <= focused[0] <= 106 + text.text_length("sans", 13, "abc") + 2
    assert caret_columns(frozenset()) == []


def test_text_is_cut_to_its_box_with_an_ellipsis() -> None:
    long = "a very long label that cannot possibly fit in fifty pixels"
    image = pixels(screen(w("t", "text", (100, 100, 50, 20), long, style={"color": "#ffffff"})))
    assert box_colours(image, (0, 0, 1280, 100)) == {BACKGROUND}
    assert box_colours(image, (150, 0, 1280, 800)) == {BACKGROUND}
    assert WHITE in box_colours(image, (100, 100, 150, 120))
    # A box lower than a line of text: the glyphs are cut at its edges, not drawn over its neighbours.
    short = pixels(screen(w("t", "text", (100, 100, 200, 6), "Tall", style={"color": "#ffffff", "size": 20})))
    assert box_colours(short, (0, 106, 1280, 800)) == {BACKGROUND} and box_colours(short, (0, 0, 1280, 100)) == {BACKGROUND}
    assert len(box_colours(short, (100, 100, 300, 106))) > 1


def test_children_are_clipped_to_their_parents_and_later_siblings_paint_on_top() -> None:
    spill = w("item", "group", (110, 130, 80, 60), style={"fill": "#ff0000"})
    image = pixels(screen(w("list", "group", (100, 100, 100, 50), style={"fill": "#ffffff"}, children=[spill])))
    assert image.getpixel((150, 140)) == RED and image.getpixel((150, 160)) == BACKGROUND
    under, over = (
        w("a", "group", (100, 100, 50, 50), style={"fill": "#ff0000"}),
        w("b", "group", (120, 120, 50, 50), style={"fill": "#0000ff"}),
    )
    assert pixels(screen(under, over)).getpixel((130, 130)) == (0, 0, 255)
    assert pixels(screen(over, under)).getpixel((130, 130)) == RED


def test_every_icon_draws_a_picture_and_an_unknown_name_a_tile() -> None:
    drawn = {}
    for name in [*ICONS, "no-such-icon"]:
        image = Image.new("RGB", (48, 48), WHITE)
        draw_icon(ImageDraw.Draw(image), name, (0, 0, 48, 48))
        drawn[name] = image.tobytes()
        assert len(box_colours(image, (0, 0, 48, 48))) > 1, name
    assert drawn["no-such-icon"] == drawn["app"] and drawn["folder"] != drawn["mail"]


def test_the_overlay_labels_clickable_widgets_with_their_ids_and_skips_covered_ones() -> None:
    def tree(button_id: str) -> Widget:
        covered = w("under", "button", (400, 400, 60, 30), "Under")
        dialog = w("dlg", "dialog", (380, 380, 200, 100), "Sure?")
        return screen(w(button_id, "button", (100, 100, 200, 40), "Go"), covered, dialog)

    plain, marked = pixels(tree("b")), Image.open(io.BytesIO(render_overlay(tree("b"))))
    assert plain.getpixel((100, 100)) != (229, 62, 62) and marked.getpixel((100, 100)) == (229, 62, 62)  # the first mark's colour
    assert render_png(tree("b")) != render_overlay(tree("b"))
    # The id is written on the tag: a longer id makes a wider tag.
    longer = Image.open(io.BytesIO(render_overlay(tree("a-much-longer-button-id"))))

    def tag_width(image: Image.Image) -> int:
        # Below the 2-pixel outline, the tag is the only thing drawn in the mark's colour.
        return sum(1 for x in range(103, 297) if any(image.getpixel((x, y)) == (229, 62, 62) for y in range(103, 112)))

    assert tag_width(longer) > tag_width(marked) + 40
    # "under" sits beneath the dialog: it cannot be clicked there, so it gets no mark.
    assert box_colours(marked, (380, 380, 580, 480)) == box_colours(plain, (380, 380, 580, 480))


def test_roles_paint_their_states() -> None:
    checked = pixels(screen(w("c", "checkbox", (100, 100, 120, 24), "On", states=frozenset({"checked"}))))
    unchecked = pixels(screen(w("c", "checkbox", (100, 100, 120, 24), "On")))
    assert (49, 130, 206) in box_colours(checked, (100, 100, 120, 124)) and (49, 130, 206) not in box_colours(
        unchecked, (100, 100, 120, 124)
    )
    selected = pixels(
        screen(w("l", "list", (100, 100, 200, 60), children=[w("i", "listitem", (100, 100, 200, 20), "x", states=frozenset({"selected"}))]))
    )
    assert selected.getpixel((290, 110)) == (49, 130, 206)
    ad = pixels(screen(w("ad", "banner", (100, 100, 300, 50), "Sale!", states=frozenset({"ad"}))))
    assert ad.getpixel((200, 110)) == (254, 252, 191)  # loud yellow, whatever the theme
