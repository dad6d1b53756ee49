"""The accessibility tree as a flat map (element id -> node) for comparing and editing screens.

flat = flatten(tree)           # id -> (parent, role, name, value, states, bounds), in paint order
tree = unflatten(flat)         # back to an accessibility_tree dict (flatten's inverse)
flat = ordered(flat, kids)     # depth first by explicit child lists (how edits place and reorder elements)
"""

from __future__ import annotations

from typing import Any

Node = tuple[str, str, str, str, tuple[str, ...], tuple[int, ...]]  # parent, role, name, value, states, bounds
Flat = dict[str, Node]  # element id -> node, in tree (paint) order
ROOT_PARENT = ""


def flatten(tree: dict[str, Any]) -> Flat:
    out: Flat = {}

    def visit(node: dict[str, Any], parent: str) -> None:
        out[node["id"]] = (parent, node["role"], node["name"], node.get("value", ""), tuple(node.get("states", ())), tuple(node["bounds"]))
        for child in node.get("children", ()):
            visit(child, node["id"])

    visit(tree, ROOT_PARENT)
    return out


def unflatten(flat: Flat) -> dict[str, Any]:
    """The accessibility_tree dict of `flat` (children in flat order); the inverse of flatten."""
    nodes: dict[str, dict[str, Any]] = {}
    root: dict[str, Any] = {}
    for widget_id, (parent, role, name, value, states, bounds) in flat.items():
        node: dict[str, Any] = {"id": widget_id, "role": role, "name": name, "bounds": list(bounds)}
        if value:
            node["value"] = value
        if states:
            node["states"] = sorted(states)
        nodes[widget_id] = node
        if parent == ROOT_PARENT:
            root = node
        elif parent in nodes:
            nodes[parent].setdefault("children", []).append(node)
    return root


def focused_id(flat: Flat) -> str | None:
    return next((i for i, n in flat.items() if "focused" in n[4]), None)


def topmost(flat: Flat, x: int, y: int) -> str | None:
    """The topmost element under (x, y): the last in paint order whose bounds contain it (widgets.hit_test)."""
    hit = None
    for widget_id, node in flat.items():
        left, top, width, height = node[5]
        if left <= x < left + width and top <= y < top + height:
            hit = widget_id
    return hit


def inside(flat: Flat, widget_id: str, ancestor: str) -> bool:
    while widget_id and widget_id != ancestor:
        widget_id = flat[widget_id][0]
    return widget_id == ancestor


def window_ids(flat: Flat) -> list[str]:
    """The app window's elements: everything below the root but the taskbar's subtree."""
    out, skip = [], {"taskbar"}
    for widget_id, node in flat.items():
        if node[0] in skip or widget_id in skip:
            skip.add(widget_id)
        elif node[0] != ROOT_PARENT:
            out.append(widget_id)
    return out


def children(flat: Flat) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for widget_id, node in flat.items():
        out.setdefault(node[0], []).append(widget_id)
    return out


def ordered(nodes: Flat, kids: dict[str, list[str]]) -> Flat:
    """The nodes reachable from the root, depth first in `kids` order (nodes whose parent went are dropped)."""
    out: Flat = {}
    stack = list(reversed(kids.get(ROOT_PARENT, [])))
    while stack:
        widget_id = stack.pop()
        out[widget_id] = nodes[widget_id]
        stack.extend(reversed(kids.get(widget_id, [])))
    return out
