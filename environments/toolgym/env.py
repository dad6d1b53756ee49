"""ToolGymEnv: the Env contract over the toolgym world (see world.py for tasks, rewards and episode end)."""

from __future__ import annotations

import pickle
from typing import Any

from environments.core import Env, Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.toolgym.world import ITEMS, PEOPLE, World, composite, new_world, question


def _one_text_argument(name: str, description: str, argument: str) -> ToolSpec:
    """Every toolgym tool takes one short text argument."""
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {argument: {"type": "string", "maxLength": 40}},
            "required": [argument],
            "additionalProperties": False,
        },
    )


_LOOKUP = _one_text_argument("lookup", "Look up the color of an item.", "item")
_ANSWER = _one_text_argument("answer", "Give the final answer: the color you found. Ends the episode.", "color")
_SAY = _one_text_argument("say", "Say one word. Ends the episode.", "word")
_OWNER = _one_text_argument("owner", "Find the thing a person owns.", "person")


class ToolGymEnv(Env):
    name = "toolgym"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.max_calls = int(task.spec.get("max_calls", 4))
        self.world: World = new_world(task.key, seed)

    def reset(self) -> Observation:
        self.world = new_world(self.task.key, self.seed)
        return Observation(text=question(self.world), data={"task": self.task.key})

    def tools(self) -> list[ToolSpec]:
        if self.task.key == "chain":
            return [_OWNER, _LOOKUP, _ANSWER]
        return [_SAY] if self.task.key in ("echo", "guess") else [_LOOKUP, _ANSWER]

    def step(self, call: ToolCall) -> StepResult:
        world = self.world
        if world.finished:
            return StepResult(content={"error": "the episode is over"}, is_error=True, done=True, termination_reason=world.reason)
        world.calls += 1
        result = self._apply(call)
        if not world.finished and world.calls >= self.max_calls:
            world.finished, world.reason = True, "max_steps"
        if world.finished:
            result.done, result.termination_reason = True, world.reason
            result.reward = composite(world)
        return result

    def _apply(self, call: ToolCall) -> StepResult:
        world, spec = self.world, self.tool(call.name)
        if spec is None:
            return StepResult(content={"error": f"unknown tool {call.name!r}; tools: {[t.name for t in self.tools()]}"}, is_error=True)
        problem = validate_arguments(spec.parameters, call.arguments)
        if problem:
            return StepResult(content={"error": problem}, is_error=True)
        if call.name == "owner":
            person = call.arguments["person"]
            if person not in world.owners:
                return StepResult(content={"error": f"no person {person!r}; people: {list(PEOPLE)}"}, is_error=True)
            world.asked.append(person)
            item = world.owners[person]
            return StepResult(content={"person": person, "item": item}, events=[Event(f"note:{person}", "owns", after=item)])
        if call.name == "lookup":
            item = call.arguments["item"]
            if item not in world.colors:
                return StepResult(content={"error": f"no item {item!r}; items: {list(ITEMS)}"}, is_error=True)
            world.looked_up.append(item)
            return StepResult(content={"item": item, "color": world.colors[item]}, events=self._lookup_events(item))
        world.answer = call.arguments["color" if call.name == "answer" else "word"]
        world.finished, world.reason = True, "agent_stop"
        events = []
        if world.task == "chain":
            if world.target in world.looked_up:
                events.append(Event(f"note:{world.target}", "color", op="read"))
            events.append(Event("episode", "answer", after=world.answer))
        return StepResult(content={"ok": True}, events=events)

    def _lookup_events(self, item: str) -> list[Event]:
        """chain only: the lookup built on the owner() answers that named this item, and revealed its color."""
        world = self.world
        if world.task != "chain":
            return []
        reads = [Event(f"note:{p}", "owns", op="read") for p in dict.fromkeys(world.asked) if world.owners[p] == item]
        return [*reads, Event(f"note:{item}", "color", after=world.colors[item])]

    def score(self) -> Score:
        value = composite(self.world) if self.world.finished else 0.0
        return Score(
            composite=value, passed=value >= self.task.pass_threshold, components={"composite": value}, termination_reason=self.world.reason
        )

    def snapshot(self) -> bytes:
        return pickle.dumps(self.world)

    def restore(self, blob: bytes) -> None:
        self.world = pickle.loads(blob)

    def state_hash(self) -> str:
        return self.world.state_hash()

    @property
    def done(self) -> bool:
        return self.world.finished

    def summary(self) -> str:
        return f"asked: {self.world.target}; looked up: {self.world.looked_up}; calls: {self.world.calls}"
