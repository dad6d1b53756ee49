"""A playable environment that exists only in the tests: proof that the play page needs no lab/ change per env.

Tools
    look (the "Counters" panel: a table), history (the "Total" panel: a chart over calls), add(name, n),
    notes / write(path, content) (the "Notes" panel: files with an editor), screen / click(x, y) (the "Screen"
    panel: a clickable image).
Rewards
    0 per step; the score is the total reached over TARGET, capped at 1.
Episode End
    after CALLS tool calls ("max_steps"), the budget being spent.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from environments import registry
from environments.core import Env, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.meta import EnvMeta, Panel

CALLS = 5
TARGET = 10
TASK = TaskSpec(env="toycount", key="count", split="dev", description="Raise the counters to 10 in five calls.", public_seeds=(0,))
META = EnvMeta(
    env="toycount",
    playable=True,
    panels=(
        Panel("Counters", "look", renderer="table"),
        Panel("Total", "history", renderer="chart"),
        Panel("Notes", "notes", renderer="files", action_tool="write"),
        Panel("Screen", "screen", renderer="image", action_tool="click"),
    ),
)
_PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def _tool(tool: str, description: str, /, **properties: dict[str, Any]) -> ToolSpec:
    """A toy tool whose arguments are all required."""
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return ToolSpec(tool, description, schema)


TOOLS = [
    _tool("look", "The counters."),
    _tool("history", "The total after each call."),
    _tool("notes", "The notes files."),
    _tool("screen", "A picture of the counters."),
    _tool("write", "Write a notes file.", path={"type": "string", "maxLength": 40}, content={"type": "string", "maxLength": 200}),
    _tool(
        "click",
        "Click the picture: the left half adds 1 to red, the right half to blue.",
        x={"type": "integer", "minimum": 0},
        y={"type": "integer", "minimum": 0},
    ),
    _tool(
        "add", "Add n to a counter.", name={"type": "string", "enum": ["red", "blue"]}, n={"type": "integer", "minimum": 1, "maximum": 5}
    ),
]


class ToyCountEnv(Env):
    name = "toycount"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int) -> None:
        super().__init__(task, seed)
        self.state: dict[str, Any] = {}

    def reset(self) -> Observation:
        self.state = {"red": self.seed % 3, "blue": 0, "calls": 0, "totals": [], "notes": {"todo.txt": "count"}}
        return Observation(text=f"Raise red + blue to {TARGET} in {CALLS} calls.")

    def tools(self) -> list[ToolSpec]:
        return TOOLS

    def step(self, call: ToolCall) -> StepResult:
        s = self.state
        if self.done:
            return StepResult(content={"error": "the episode is over"}, is_error=True, done=True, termination_reason="max_steps")
        s["calls"] += 1
        spec = self.tool(call.name)
        if spec is None or (problem := validate_arguments(spec.parameters, call.arguments)):
            content: Any = {"error": f"unknown tool {call.name!r}" if spec is None else problem}
            result = StepResult(content=content, is_error=True)
        elif call.name == "add":
            s[call.arguments["name"]] += int(call.arguments["n"])
            result = StepResult(content={"ok": True})
        elif call.name == "write":
            s["notes"][call.arguments["path"]] = call.arguments["content"]
            result = StepResult(content={"ok": True})
        elif call.name == "click":
            s["red" if call.arguments["x"] < 50 else "blue"] += 1
            result = StepResult(content={"ok": True})
        elif call.name == "notes":
            result = StepResult(content={"files": [{"path": p, "content": c} for p, c in sorted(s["notes"].items())]})
        elif call.name == "screen":
            result = StepResult(content={"src": _PIXEL, "alt": "counters"})
        elif call.name == "look":
            result = StepResult(content={"counters": [{"name": k, "value": s[k]} for k in ("red", "blue")]})
        else:
            result = StepResult(content={"points": [{"t": i, "total": v} for i, v in enumerate(s["totals"])]})
        s["totals"].append(s["red"] + s["blue"])
        if self.done:
            result.done, result.termination_reason = True, "max_steps"
        return result

    def score(self) -> Score:
        value = min(1.0, (self.state["red"] + self.state["blue"]) / TARGET) if self.done else 0.0
        return Score(composite=value, passed=value >= 1.0, termination_reason=self.termination_reason)

    def snapshot(self) -> bytes:
        return pickle.dumps(self.state)

    def restore(self, blob: bytes) -> None:
        self.state = pickle.loads(blob)

    def state_hash(self) -> str:
        return json.dumps(self.state, sort_keys=True)

    @property
    def done(self) -> bool:
        return bool(self.state) and self.state["calls"] >= CALLS

    @property
    def termination_reason(self) -> str | None:
        return "max_steps" if self.done else None

    def status(self) -> dict[str, str]:
        return {
            "calls-left": f"{CALLS - self.state['calls']} of {CALLS} calls left",
            "total": f"total {self.state['red'] + self.state['blue']}",
        }


@contextmanager
def toy_registered() -> Iterator[None]:
    """Registers the toy's task and metadata for the block, and forgets them after."""
    registry.list_tasks()  # load the real packages first, so the toy is an addition
    registry.register(TASK, ToyCountEnv)
    registry.register_env(META)
    try:
        yield
    finally:
        registry._TASKS.pop(TASK.id, None)
        registry._ENVS.pop(META.env, None)
