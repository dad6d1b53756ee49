"""A screen's identity: what kind of screen it is, with the seed's content left out.

    key = screen_id(tree)        # 16 hex digits; tree: a widgets.accessibility_tree dict
    sig = element_sig(node)      # what an element is, for "the same control on another screen"

Two screens are the same screen when their abstract trees are equal. The abstract tree keeps, per visible node,
its role, its id (for content roles only the id's family, its first two dotted parts: "mail.item" for
"mail.item.m2"), its name where the name is the control's label (buttons, tabs, checkboxes, menu items, text
boxes, links, icons; not groups, lists, tables or dialogs, whose names can be content such as a product's name,
nor list items, rows, cells, text, window titles or promotions), and the states that
say what kind of screen it is ("ad", "disabled", "expanded", "editable"; "selected" on tabs, list items, rows and
cells). It drops bounds, values, and the states that are values ("checked", "focused", "selected" on a choice
button: a setting's value). Children are a sorted set: siblings with equal abstract subtrees count once and
their order is left out. So selecting another message, typing into a field, toggling a setting or scrolling is
the same screen; opening a tab, a form, a dialog or another app is a new one; A/B variants (mirrored, reversed)
are the same screen; a version-2 app (renamed controls) and a promotion make new ones.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

CONTENT_ROLES = frozenset({"listitem", "row", "cell", "text", "image", "titlebar", "window", "banner"})
LABELLED = frozenset({"button", "tab", "checkbox", "menuitem", "textbox", "link", "icon"})  # their name is a label
SELECTABLE = frozenset({"tab", "listitem", "row", "cell"})
KIND_STATES = frozenset({"ad", "disabled", "expanded", "editable"})
INTERACTIVE = ("button", "listitem", "tab", "checkbox", "cell", "textbox", "link", "menuitem", "row", "icon")


def _key(node: dict[str, Any]) -> str:
    return json.dumps(node, sort_keys=True, separators=(",", ":"))


def abstract(tree: dict[str, Any]) -> dict[str, Any]:
    """The abstract tree (module docstring): {"r": role, "i": id or family, "n": label, "s": states, "c": children}."""
    role, states = tree["role"], set(tree.get("states", ()))
    content = role in CONTENT_ROLES or "ad" in states
    kept = (states & KIND_STATES) | (states & {"selected"} if role in SELECTABLE else set())
    me: dict[str, Any] = {"r": role, "i": ".".join(tree["id"].split(".")[:2]) if content else tree["id"], "s": sorted(kept)}
    if role in LABELLED and not content:
        me["n"] = tree["name"]
    kids = {_key(k): k for k in (abstract(c) for c in tree.get("children", ()))}
    me["c"] = [kids[k] for k in sorted(kids)]
    return me


def abstract_json(tree: dict[str, Any]) -> str:
    return _key(abstract(tree))


def screen_id(tree: dict[str, Any]) -> str:
    return hashlib.sha256(abstract_json(tree).encode()).hexdigest()[:16]


def element_sig(node: dict[str, Any]) -> str:
    """The element without its children or per-seed content: "button mail.reply Reply", "listitem mail.item"."""
    role, states = node["role"], set(node.get("states", ()))
    if role in CONTENT_ROLES or "ad" in states:
        return f"{role} {'.'.join(node['id'].split('.')[:2])}" + (" {ad}" if "ad" in states else "")
    return f"{role} {node['id']}" + (f" {node['name']}" if role in LABELLED else "")


def interactive(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The visible interactive elements in tree order (the tree lists only visible ones)."""
    out: list[dict[str, Any]] = []

    def visit(node: dict[str, Any]) -> None:
        if node["role"] in INTERACTIVE and "disabled" not in node.get("states", ()):
            out.append(node)
        for child in node.get("children", ()):
            visit(child)

    visit(tree)
    return out


def open_app(tree: dict[str, Any]) -> str:
    """The open app's key ("mail"), or "desktop" when none is open: the first window's id family."""
    window = next((c for c in tree.get("children", ()) if c["role"] == "window"), None)
    return window["id"].split(".", 1)[0] if window else "desktop"
