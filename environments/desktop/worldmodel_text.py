"""A world-model tuple as text, and as a canonical record a text world model is fine-tuned on.

    text = tree_text(t["tree"])     # the accessibility text a policy reads (`[id] role "name" value=... {states}`)
    record = sft_record(t)          # user: screen + action; agent (the one trained turn): the next screen

The record has the shape of the diagnosis view's (training/diagnosis_view.py): one user step with the prompt and
one agent step with the answer, header.meta.view = "worldmodel", so `python -m training sft --data FILE` trains
on it as it is (only the agent's tokens are supervised). Bounds are left out of the text, as from the policies'
screen; the tuple keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from environments.desktop.widgets import Widget, accessibility_text
from environments.records import Header, Record
from environments.trajectory import make_step, new_record

WORLDMODEL_VIEW = "worldmodel"
INSTRUCTION = "Predict the screen after this action, in the same format, and nothing else."


def widget_of(tree: dict[str, Any]) -> Widget:
    """The accessibility_tree dict back as a Widget (no paint hints: the dict has none)."""
    children = [widget_of(c) for c in tree.get("children", ())]
    return Widget(
        tree["id"], tree["role"], tree["name"], tuple(tree["bounds"]), tree.get("value", ""), frozenset(tree.get("states", ())), children
    )  # type: ignore[arg-type]


def tree_text(tree: dict[str, Any]) -> str:
    return accessibility_text(widget_of(tree))


def action_text(action: dict[str, Any]) -> str:
    return f"{action['name']} {json.dumps(action.get('arguments') or {}, sort_keys=True)}"


def sft_prompt(t: dict[str, Any]) -> str:
    return f"Desktop screen:\n{tree_text(t['tree'])}\n\nAction: {action_text(t['action'])}\n\n{INSTRUCTION}"


def sft_record(t: dict[str, Any]) -> Record:
    header: Header = {
        "env": "desktop",
        "task": t["task"],
        "seed": t.get("seed"),
        "source": "upload",
        "policy": {"name": "world-model-data", "kind": "external"},
        "meta": {"view": WORLDMODEL_VIEW, "drift": t.get("drift"), "step": t.get("step"), "from_policy": t.get("policy")},
    }
    steps = [
        make_step(index=0, source="user", message=sft_prompt(t)),
        make_step(index=1, source="agent", message=tree_text(t["next_tree"])),
    ]
    return new_record(header=header, steps=steps)
