"""Baseline next-state predictors over the accessibility tree: "no change", and one learnt from training tuples.

    model = EditModel.learn(train_tuples)                  # tuples of worldmodel.py's export
    predicted = model.predict(tree, action)                # an accessibility_tree dict
    predicted = NoChange().predict(tree, action)           # the tree as it is

The learnt model reads each training transition as a set of small edits ("atoms") written relative to the
action where it can be: the target (the clicked, dragged or scrolled element; for open_app its taskbar button),
the focused field, the target's siblings, or the whole app window; otherwise a literal element id.

    ("state+", ref, state) / ("state-", ref, state)   focus moves, list selection, checkboxes, taskbar selection
    ("value", ref, "append" | "typed" | "backspace" | "clear" | ("=", text))   typing into the focused field
    ("node", ref, (parent, role, name, bounds))        an element renamed, moved or resized
    ("remove", ref)                                    an element and its subtree gone ("window": the whole app)
    ("add", id, node, next_sibling)                    a new element (window chrome, a detail pane, a form)
    ("order", ref, child ids)                          a list re-sorted (children in a new order)

It keys transitions by (action kind, context, target family). The context is the target's role and its
KEY_STATES ("tab:selected", "button:ad", "checkbox:checked") for click, drag and scroll, the focused field's for
type, the combination and the focused field's for key, the app and whether it is open for open_app, the command
word for shell; the family is the target's id up to its second dot ("shop.item"). A click by id is read as the
environment reads it, at the element's centre, so a promotion painted there is the target. Per key the model keeps
the atoms that occur in more than half of that key's training transitions (the most frequent edit, atom by atom)
and applies them to the current tree; a key seen fewer than MIN_SUPPORT times falls back to (kind, context), then
to the kind alone; an unseen kind predicts no change. Atoms whose reference does not resolve on the current tree
are skipped. Per-seed content (file names, prices, message text) is what it cannot predict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from environments.desktop.worldmodel_tree import Flat, children, flatten, focused_id, inside, ordered, topmost, unflatten, window_ids

Atom = tuple[Any, ...]
KEY_STATES = frozenset({"ad", "checked", "focused", "selected"})  # what a click on the target does depends on these


def target_of(flat: Flat, action: dict[str, Any]) -> str | None:
    """The element an action is about, on the screen before it (None when it names none that is on screen)."""
    name, args = action["name"], action.get("arguments") or {}
    found: str | None
    if name == "open_app":
        found = f"launch.{args.get('app')}"
    elif name in ("type", "key"):
        return focused_id(flat)
    else:
        prefix = "from_" if name == "drag" else ""
        named = args.get(prefix + "id")
        found = named if isinstance(named, str) else None  # a malformed call (recorded with its error) names nothing
        if found in flat:  # a click by id lands at its centre, on whatever is painted there (gui.point_of)
            left, top, width, height = flat[found][5]
            hit = topmost(flat, left + width // 2, top + height // 2)
            found = found if hit is None or inside(flat, hit, found) else hit
        elif isinstance(args.get(prefix + "x"), int) and isinstance(args.get(prefix + "y"), int):
            found = topmost(flat, args[prefix + "x"], args[prefix + "y"])
    return found if found in flat else None


def context_keys(flat: Flat, action: dict[str, Any]) -> list[tuple[str, ...]]:
    """The action's keys, most specific first: (kind, context, family), (kind, context), (kind,); the family is the
    target's id up to its second dot ("mail.item" for "mail.item.m2"), for actions with a target."""
    name, args = action["name"], action.get("arguments") or {}
    target = target_of(flat, action)
    role = "none" if target is None else flat[target][1] + "".join(f":{s}" for s in sorted(KEY_STATES & set(flat[target][4])))
    family = ".".join(target.split(".")[:2]) if target is not None else ""
    context = {
        "key": f"{str(args.get('combo', '')).lower()}@{role}",
        "open_app": f"{args.get('app', '')}@{role}",
        "shell": str(args.get("command", "")).split(" ", 1)[0],
    }.get(name, role)
    if name in ("click", "drag", "scroll", "type", "key"):
        return [(name, context, family), (name, context), (name,)]
    return [(name, context if name in ("open_app", "shell") else ""), (name,)]


def _refs(flat: Flat, action: dict[str, Any]) -> dict[str, str]:
    """Element id -> relative reference, for the elements a reference can name on this screen. Siblings of the
    target are named "target-sibling" only by state- atoms (a selection leaving them), so refs lists them apart."""
    target, focused = target_of(flat, action), focused_id(flat)
    refs = {i: "target-sibling" for i, n in flat.items() if target is not None and n[0] == flat[target][0] and i != target}
    if focused is not None:
        refs[focused] = "focused"
    if target is not None:
        refs[target] = "target"
    return refs


def _ref(refs: dict[str, str], widget_id: str, kind: str) -> str:
    ref = refs.get(widget_id, widget_id)
    return widget_id if ref == "target-sibling" and kind != "state-" else ref


def _value_atom(before: str, after: str, action: dict[str, Any]) -> str | tuple[str, str]:
    text = str((action.get("arguments") or {}).get("text", "")) if action["name"] == "type" else None
    if text is not None and after == before + text:
        return "append"
    if text is not None and after == text:
        return "typed"
    if after == before[:-1] and before:
        return "backspace"
    return "clear" if after == "" else ("=", after)


def atoms_of(before: Flat, after: Flat, action: dict[str, Any]) -> list[Atom]:
    """The transition as atoms (module docstring), removals first, then in the next tree's order."""
    refs, atoms = _refs(before, action), dict[Atom, None]()
    removed = [i for i in before if i not in after]
    window = window_ids(before)
    if window and set(window) <= set(removed):
        atoms[("remove", "window")] = None
        removed = [i for i in removed if i not in window]
    atoms |= dict.fromkeys(("remove", _ref(refs, i, "remove")) for i in removed if before[i][0] not in removed)
    order = list(after)
    for position, widget_id in enumerate(order):
        node = after[widget_id]
        if widget_id not in before:
            following = next((s for s in order[position + 1 :] if after[s][0] == node[0]), None)
            atoms[("add", widget_id, node, following)] = None
            continue
        old, ref = before[widget_id], _ref(refs, widget_id, "node")
        if (old[0], old[1], old[2], old[5]) != (node[0], node[1], node[2], node[5]):
            atoms[("node", ref, (node[0], node[1], node[2], node[5]))] = None
        if old[3] != node[3]:
            atoms[("value", ref, _value_atom(old[3], node[3], action))] = None
        atoms |= dict.fromkeys(("state+", ref, s) for s in sorted(set(node[4]) - set(old[4])))
        for state in sorted(set(old[4]) - set(node[4])):
            # "every sibling loses it" only when none kept it (a settings pane holds several choice groups)
            kept = any(state in after[i][4] for i, r in refs.items() if r == "target-sibling" and i in after)
            atoms[("state-", widget_id if kept else _ref(refs, widget_id, "state-"), state)] = None
    was, now = children(before), children(after)
    for parent, kids in now.items():
        stayed = [k for k in was.get(parent, []) if k in after and after[k][0] == parent]
        if stayed != [k for k in kids if k in stayed]:
            atoms[("order", _ref(refs, parent, "order"), tuple(kids))] = None
    return list(atoms)


def _resolve(flat: Flat, refs: dict[str, str], ref: str) -> list[str]:
    named = [i for i, r in refs.items() if r == ref]
    return named if ref in ("target", "focused", "target-sibling") else ([ref] if ref in flat else [])


def _drop(flat: Flat, widget_id: str) -> None:
    gone = {widget_id}
    for i, node in list(flat.items()):
        if i in gone or node[0] in gone:
            gone.add(i)
            del flat[i]


def apply_atoms(tree: dict[str, Any], action: dict[str, Any], atoms: Iterable[Atom]) -> dict[str, Any]:
    """`atoms` applied to `tree` (removals, changes, additions in their training order, then reorderings).
    Applying a transition's own atoms_of to its first tree gives its second exactly."""
    flat = flatten(tree)
    refs, atoms = _refs(flat, action), list(atoms)
    text = str((action.get("arguments") or {}).get("text", ""))
    for atom in atoms:
        if atom[0] == "remove":
            for widget_id in window_ids(flat) if atom[1] == "window" else _resolve(flat, refs, atom[1]):
                if widget_id in flat:
                    _drop(flat, widget_id)
    for kind, ref, what in (a for a in atoms if a[0] in ("node", "value", "state+", "state-")):
        for widget_id in _resolve(flat, refs, ref):
            if widget_id not in flat:
                continue
            parent, role, name, value, states, bounds = flat[widget_id]
            if kind == "node":
                parent, role, name, bounds = what
            elif kind == "value":
                edits = {"append": value + text, "typed": text, "backspace": value[:-1], "clear": ""}
                value = edits[what] if isinstance(what, str) else str(what[1])
            else:
                states = tuple(sorted(set(states) | {what} if kind == "state+" else set(states) - {what}))
            flat[widget_id] = (parent, role, name, value, states, bounds)
    kids = children(flat)
    additions = [a for a in atoms if a[0] == "add" and a[1] not in flat]
    flat |= {a[1]: a[2] for a in additions}
    for _, widget_id, node, following in reversed(additions):  # last first, so a new sibling's next one is placed
        siblings = kids.setdefault(node[0], [])
        siblings.insert(siblings.index(following) if following in siblings else len(siblings), widget_id)
    for _, ref, order in (a for a in atoms if a[0] == "order"):
        for parent in _resolve(flat, refs, ref):
            mine = kids.get(parent, [])
            kids[parent] = [k for k in order if k in mine] + [k for k in mine if k not in order]
    return unflatten(ordered(flat, kids))


class NoChange:
    name = "no-change"

    def predict(self, tree: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        return tree


@dataclass
class EditModel:
    """Per key (context_keys) the atoms of more than half its training transitions; a key is used when it was
    seen MIN_SUPPORT times, else the next, less specific one."""

    atoms: dict[tuple[str, ...], list[Atom]] = field(default_factory=dict)
    support: dict[tuple[str, ...], int] = field(default_factory=dict)
    name: str = "learnt edits"
    MIN_SUPPORT = 3

    @classmethod
    def learn(cls, tuples: Iterable[dict[str, Any]]) -> EditModel:
        counts: dict[tuple[str, ...], Counter[Atom]] = {}
        seen: Counter[tuple[str, ...]] = Counter()
        first: dict[Atom, int] = {}  # additions are applied in the order training first saw them
        for t in tuples:
            before, action = flatten(t["tree"]), t["action"]
            atoms = atoms_of(before, flatten(t["next_tree"]), action)
            for atom in atoms:
                first.setdefault(atom, len(first))
            for key in context_keys(before, action):
                seen[key] += 1
                counts.setdefault(key, Counter()).update(set(atoms))
        frequent = {k: sorted((a for a, n in c.items() if 2 * n > seen[k]), key=lambda a: first[a]) for k, c in counts.items()}
        return cls(frequent, dict(seen))

    def atoms_for(self, tree: dict[str, Any], action: dict[str, Any]) -> list[Atom]:
        keys = context_keys(flatten(tree), action)
        key = next((k for k in keys if self.support.get(k, 0) >= self.MIN_SUPPORT), keys[-1])
        return self.atoms.get(key, [])

    def predict(self, tree: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        atoms = self.atoms_for(tree, action)
        return apply_atoms(tree, action, atoms) if atoms else tree
