"""ToolGymEnv: the Env contract over the toolgym world (see world.py for tasks, rewards and episode end)."""

from __future__ import annotations

from typing import Any

from environments.budgeted import WorldEnv
from environments.core import DEFAULT_MAX_STEPS, Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
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


class ToolGymEnv(WorldEnv):
    name = "toolgym"
    version = "1"
    world: World

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.max_calls = int(task.spec.get("max_calls", 4))
        self.world = new_world(task.key, seed)

    def reset(self) -> Observation:
        self.world = new_world(self.task.key, self.seed)
        return Observation(text=question(self.world), data={"task": self.task.key})

    def tools(self) -> list[ToolSpec]:
        if self.task.key == "chain":
            return [_OWNER, _LOOKUP, _ANSWER]
        return [_SAY] if self.task.key in ("echo", "guess") else [_LOOKUP, _ANSWER]

    def _run(self, call: ToolCall) -> StepResult:
        world = self.world
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
        world.end("agent_stop")
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

    def state_hash(self) -> str:
        return self.world.state_hash()

    # Two quirks of version 1, kept so that its records and harness limits stay what they were (a version 2 could
    # take the budget's): the header records every end as "horizon_reached" (step results and the score carry the
    # real reason), and the harness cap is the default, so turns without a tool call, which spend no budget, go on.

    @property
    def termination_reason(self) -> str | None:
        return "horizon_reached" if self.done else None

    @property
    def max_steps(self) -> int:
        return DEFAULT_MAX_STEPS

    def summary(self) -> str:
        return f"asked: {self.world.target}; looked up: {self.world.looked_up}; calls: {self.world.calls}"
