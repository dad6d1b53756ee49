"""The desktop's tool specs: GUI actions, the observation, the shell and submit (one declaration serves the
OpenAI schema, MCP and the play page's forms)."""

from __future__ import annotations

from typing import Any

from environments.core import ToolSpec
from environments.desktop.drift import LEVELS
from environments.desktop.gui import KEYS
from environments.desktop.state import APPS
from environments.desktop.widgets import SCREEN_HEIGHT, SCREEN_WIDTH

_ID = {"type": "string", "minLength": 1, "maxLength": 160}
_X = {"type": "integer", "minimum": 0, "maximum": SCREEN_WIDTH - 1}
_Y = {"type": "integer", "minimum": 0, "maximum": SCREEN_HEIGHT - 1}


def _tool(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = (), category: str = "gui") -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}
    return ToolSpec(name, description, schema, category=category)


TOOLS = (
    _tool(
        "observe",
        'The screen as an accessibility tree ([id] role "name" value=... {states}) and a short description; '
        "screenshot=true also renders a PNG (its sha256 is returned).",
        {"screenshot": {"type": "boolean"}},
    ),
    _tool(
        "click",
        "Click an element by id, or the point x,y (1280x800 screen). Whatever is on top there takes the click.",
        {"id": _ID, "x": _X, "y": _Y},
    ),
    _tool(
        "type",
        "Type text into the focused text box (after ctrl+a it replaces the text).",
        {"text": {"type": "string", "minLength": 1, "maxLength": 500}},
        ("text",),
    ),
    _tool("key", f"Press a key or combination: {', '.join(KEYS)}.", {"combo": {"type": "string", "enum": list(KEYS)}}, ("combo",)),
    _tool(
        "scroll",
        "Scroll a list (the open app's main list unless id names one) by some rows.",
        {"direction": {"type": "string", "enum": ["up", "down"]}, "amount": {"type": "integer", "minimum": 1, "maximum": 20}, "id": _ID},
        ("direction",),
    ),
    _tool(
        "drag",
        "Drag from an element (from_id, or from_x/from_y) onto another (to_id, or to_x/to_y): moves a file onto a folder.",
        {"from_id": _ID, "from_x": _X, "from_y": _Y, "to_id": _ID, "to_x": _X, "to_y": _Y},
    ),
    _tool("wait", "Let a moment pass (toasts fade).", {}),
    _tool("open_app", "Bring an app's window up, as its taskbar button does.", {"app": {"type": "string", "enum": list(APPS)}}, ("app",)),
    _tool(
        "shell",
        "Run one command in the desktop's own shell over the same files and apps (help lists commands; no pipes).",
        {"command": {"type": "string", "minLength": 1, "maxLength": 1000}},
        ("command",),
        category="shell",
    ),
    _tool("submit", "Declare the task done and end the episode.", {}, category="control"),
)

OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"drift": {"type": "string", "enum": list(LEVELS)}},
    "additionalProperties": False,
}
