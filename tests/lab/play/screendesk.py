"""A desktop-shaped environment that exists only in the tests: a widget tree with one button and one field,
a `click` tool by coordinates or id, a `type` tool, and a "Screen" panel drawn by the screenshot renderer.

Tools
    click(x, y) or click(id): presses the button "plus" when it is hit; type(text): appends to the field;
    wait(): nothing (the panel's own call).
Rewards
    0 per step; the score is presses / 3, capped at 1.
Episode End
    after 8 tool calls ("max_steps").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from environments import registry
from environments.core import Env, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.desktop.widgets import Widget, find, hit_test
from environments.meta import EnvMeta, Panel

CALLS = 8
TASK = TaskSpec(env="screendesk", key="press", split="dev", description="Press the button three times.", public_seeds=(0,))
META = EnvMeta(
    env="screendesk",
    playable=True,
    panels=(Panel("Screen", "wait", renderer="screenshot", action_tool="click"),),
    screen="environments.desktop.render:render_png",
)  # its tree is drawn the way the desktop's is
_XY = {"type": "integer", "minimum": 0, "maximum": 4000}
TOOLS = [
    ToolSpec(
        "click",
        "Click at (x, y) or on the widget `id`.",
        {"type": "object", "properties": {"x": _XY, "y": _XY, "id": {"type": "string", "maxLength": 40}}, "additionalProperties": False},
    ),
    ToolSpec(
        "type",
        "Type into the field.",
        {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 40}},
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    ToolSpec("wait", "Do nothing.", {"type": "object", "properties": {}, "additionalProperties": False}),
]
PLUS = (100, 100, 200, 60)  # the button's bounds: x 100-299, y 100-159


class ScreenDeskEnv(Env):
    name = "screendesk"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kw: Any) -> None:
        super().__init__(task, seed, **kw)
        self.state: dict[str, Any] = {"presses": 0, "text": "", "calls": 0}

    def reset(self) -> Observation:
        self.state = {"presses": 0, "text": "", "calls": 0}
        return Observation(text="Press the button three times.")

    def tools(self) -> list[ToolSpec]:
        return TOOLS

    def screen(self) -> Widget:
        s = self.state
        window = Widget(
            "win",
            "window",
            "Counter",
            (50, 50, 600, 400),
            states=frozenset({"focused"}),
            children=[
                Widget("plus", "button", f"Pressed {s['presses']}", PLUS),
                Widget("field", "textbox", "Type here", (100, 200, 300, 28), value=s["text"]),
            ],
        )
        return Widget("desktop", "desktop", "", (0, 0, 1280, 800), children=[window])

    def step(self, call: ToolCall) -> StepResult:
        s = self.state
        s["calls"] += 1
        spec = self.tool(call.name)
        if spec is None or (problem := validate_arguments(spec.parameters, call.arguments)):
            result = StepResult(content={"error": f"unknown tool {call.name!r}" if spec is None else problem}, is_error=True)
        elif call.name == "click":
            args = call.arguments
            hit = find(self.screen(), args["id"]) if "id" in args else hit_test(self.screen(), args.get("x", -1), args.get("y", -1))
            s["presses"] += hit is not None and hit.id == "plus"
            result = StepResult(content={"clicked": hit.id if hit else None})
        elif call.name == "type":
            s["text"] += call.arguments["text"]
            result = StepResult(content={"ok": True})
        else:
            result = StepResult(content={"ok": True})
        if self.done:
            result.done, result.termination_reason = True, "max_steps"
        return result

    def score(self) -> Score:
        value = min(1.0, self.state["presses"] / 3)
        return Score(composite=value, passed=value >= 1.0, termination_reason=self.termination_reason)

    def snapshot(self) -> bytes:
        return json.dumps(self.state).encode()

    def restore(self, blob: bytes) -> None:
        self.state = json.loads(blob)

    def state_hash(self) -> str:
        return json.dumps(self.state, sort_keys=True)

    @property
    def done(self) -> bool:
        return self.state["calls"] >= CALLS

    @property
    def termination_reason(self) -> str | None:
        return "max_steps" if self.done else None

    def status(self) -> dict[str, str]:
        return {"calls-left": f"{CALLS - self.state['calls']} of {CALLS} calls left"}


def register() -> None:
    registry.list_tasks()  # load the real packages first, so this env is an addition
    registry.register(TASK, ScreenDeskEnv)
    registry.register_env(META)


@contextmanager
def screendesk_registered() -> Iterator[None]:
    register()
    try:
        yield
    finally:
        registry._TASKS.pop(TASK.id, None)
        registry._ENVS.pop(META.env, None)
