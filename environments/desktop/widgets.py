"""The desktop's widget tree: the one state every other part of `environments/desktop/` reads.

Apps build a tree of `Widget`s each step from their data (a pure function of the app state and the drift seed);
the renderer paints it to pixels (render.py), the accessibility view is `accessibility_tree(root)`, clicks by
coordinate find their target with `hit_test`, and the replay chain hashes `canonical_json(root)`. Bounds are in
screen pixels of a 1280 x 800 desktop, (x, y, width, height), children inside their parent.

Roles follow the WAI-ARIA names a screen reader would announce (window, button, textbox, link, list, listitem,
menu, menuitem, checkbox, tab, table, row, cell, dialog, image, text, banner). `name` is what a screen reader
reads; `value` is a field's content; `states` are flags such as "focused", "checked", "disabled", "selected",
"hidden" (hidden widgets are neither painted nor listed nor clickable).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from environments.screens import SCREEN_HEIGHT, SCREEN_WIDTH  # noqa: F401  (the default screen is the desktop's; its modules read it here)

ROLES = frozenset(
    {
        "desktop",
        "window",
        "titlebar",
        "button",
        "textbox",
        "link",
        "list",
        "listitem",
        "menu",
        "menuitem",
        "checkbox",
        "tab",
        "tablist",
        "table",
        "row",
        "cell",
        "dialog",
        "image",
        "text",
        "banner",
        "group",
        "scrollbar",
        "icon",
    }
)
STATES = frozenset({"focused", "checked", "disabled", "selected", "hidden", "expanded", "editable", "ad"})


@dataclasses.dataclass
class Widget:
    """One node: `id` is unique in the tree and stable across steps while the widget exists (agents click by id);
    `style` carries paint hints the renderer may use (for example {"fill": "#2b6cb0", "icon": "folder"}) and is
    not part of the accessibility view."""

    id: str
    role: str
    name: str = ""
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)
    value: str = ""
    states: frozenset[str] = frozenset()
    children: list[Widget] = dataclasses.field(default_factory=list)
    style: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.role in ROLES, f"widget {self.id!r}: unknown role {self.role!r}"
        assert self.states <= STATES, f"widget {self.id!r}: unknown states {sorted(self.states - STATES)}"

    @property
    def visible(self) -> bool:
        return "hidden" not in self.states

    def contains(self, x: int, y: int) -> bool:
        left, top, width, height = self.bounds
        return left <= x < left + width and top <= y < top + height


def walk(root: Widget) -> Iterator[Widget]:
    """Every visible widget, depth first, parents before children (paint order: later widgets are on top)."""
    if not root.visible:
        return
    yield root
    for child in root.children:
        yield from walk(child)


def find(root: Widget, widget_id: str) -> Widget | None:
    return next((w for w in walk(root) if w.id == widget_id), None)


def hit_test(root: Widget, x: int, y: int) -> Widget | None:
    """The topmost visible widget under (x, y): the last one in paint order that contains the point."""
    hit = None
    for widget in walk(root):
        if widget.contains(x, y):
            hit = widget
    return hit


def accessibility_tree(root: Widget) -> dict[str, Any]:
    """What a text policy and a screen reader see: roles, names, values, bounds and states, without paint hints."""
    node: dict[str, Any] = {"id": root.id, "role": root.role, "name": root.name, "bounds": list(root.bounds)}
    if root.value:
        node["value"] = root.value
    if root.states:
        node["states"] = sorted(root.states)
    children = [accessibility_tree(c) for c in root.children if c.visible]
    if children:
        node["children"] = children
    return node


def accessibility_text(root: Widget, *, indent: int = 0) -> str:
    """The tree as indented lines (`[id] role "name" value=... {states}`), the compact form prompts use."""
    parts = [f"{'  ' * indent}[{root.id}] {root.role} {json.dumps(root.name)}"]
    if root.value:
        parts.append(f"value={json.dumps(root.value)}")
    if root.states:
        parts.append("{" + ",".join(sorted(root.states)) + "}")
    lines = [" ".join(parts)]
    lines += [accessibility_text(c, indent=indent + 1) for c in root.children if c.visible]
    return "\n".join(lines)


def canonical_json(root: Widget) -> str:
    """The whole tree, paint hints included, in one deterministic string: what the replay chain hashes."""

    def as_dict(w: Widget) -> dict[str, Any]:
        return {
            "id": w.id,
            "role": w.role,
            "name": w.name,
            "bounds": list(w.bounds),
            "value": w.value,
            "states": sorted(w.states),
            "style": w.style,
            "children": [as_dict(c) for c in w.children],
        }

    return json.dumps(as_dict(root), sort_keys=True, separators=(",", ":"))
