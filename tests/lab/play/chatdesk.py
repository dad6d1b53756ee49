"""A conversational environment that exists only in the tests: a refund desk with a `user` role slot, proof that
human play on both sides needs no lab/ change per environment.

Tools
    lookup(order_id): the order's item and status; refund(order_id): refunds it (ends the episode).
Rewards
    the score is 1 when the customer's own order was refunded and the agent said so ("refunded"), else 0.
Episode End
    after a refund ("agent_stop"), or after MAX_STEPS actor steps.
Roles
    user: the customer, who wants their order refunded and gives its number only when asked (RuleUser, the
    default); its goal card (RoleSlot.brief) tells a person or a model in the slot the same.
Anchors
    clerk: greets, asks for the order number, refunds the number the user gave and says so.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from environments import registry
from environments.core import Action, Env, Observation, Policy, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.meta import EnvMeta, RoleSlot
from environments.roles import step_role

ORDERS = ("O-101", "O-202", "O-303")
ITEMS = {"O-101": "kettle", "O-202": "lamp", "O-303": "scarf"}
ORDER = re.compile(r"O-\d{3}")
_ARG = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "maxLength": 10}},
    "required": ["order_id"],
    "additionalProperties": False,
}
TOOLS = [
    ToolSpec("lookup", "An order's item and status.", _ARG),
    ToolSpec("refund", "Refund an order. Ends the conversation.", _ARG),
]
TASK = TaskSpec(env="chatdesk", key="refund", split="dev", description="Refund the customer's order.", public_seeds=(0, 1, 2))


class ChatDeskEnv(Env):
    name = "chatdesk"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int) -> None:
        super().__init__(task, seed)
        self.reset()

    @property
    def order(self) -> str:
        return ORDERS[self.seed % len(ORDERS)]

    def reset(self) -> Observation:
        self.heard: list[list[str]] = []
        self.refunded: str | None = None
        return Observation(text="A customer is in the chat. Refund only the customer's own order, and tell them it is refunded.")

    def tools(self) -> list[ToolSpec]:
        return TOOLS

    def step(self, call: ToolCall) -> StepResult:
        spec = self.tool(call.name)
        if spec is None or (problem := validate_arguments(spec.parameters, call.arguments)):
            return StepResult(content={"error": f"unknown tool {call.name!r}" if spec is None else problem}, is_error=True)
        order = call.arguments["order_id"]
        if order not in ITEMS:
            return StepResult(content={"error": f"no order {order!r}"}, is_error=True)
        if call.name == "lookup":
            return StepResult(content={"order_id": order, "item": ITEMS[order], "status": "delivered"})
        self.refunded = order
        return StepResult(content={"refunded": order}, done=True, termination_reason="agent_stop")

    def hear(self, role: str, text: str) -> None:
        self.heard.append([role, text])

    def score(self) -> Score:
        said = any(role == "actor" and "refunded" in text.lower() for role, text in self.heard)
        value = float(self.refunded == self.order and said)
        return Score(
            composite=value,
            passed=value == 1.0,
            components={"refund": float(self.refunded == self.order)},
            termination_reason=self.termination_reason,
        )

    def snapshot(self) -> bytes:
        return json.dumps([self.heard, self.refunded]).encode()

    def restore(self, blob: bytes) -> None:
        self.heard, self.refunded = json.loads(blob)

    def state_hash(self) -> str:
        return hashlib.sha256(self.snapshot()).hexdigest()[:16]

    @property
    def max_steps(self) -> int:
        return 8

    @property
    def done(self) -> bool:
        return self.refunded is not None

    @property
    def termination_reason(self) -> str | None:
        return "agent_stop" if self.done else None

    def status(self) -> dict[str, str]:
        return {"turns": f"{len(self.heard)} messages so far"}


class RuleUser(Policy):
    """The default customer: states the request, gives the order number only when asked for it."""

    name = "rule-customer"

    def __init__(self, order: str) -> None:
        self.order = order

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        last = str(history[-1].get("message") or "").lower()
        if "refunded" in last:
            return Action(message="Thank you, bye.", reasoning="Done: the agent refunded it.")
        if "order" in last and "number" in last:
            return Action(message=f"It is {self.order}.", reasoning=f"They asked for the number; mine is {self.order}.")
        return Action(message="I want a refund.", reasoning="I will give the order number when they ask for it.")


class Clerk(Policy):
    """The anchor agent: greets, asks for the order number, refunds what the user gave and says so."""

    name = "clerk"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        said = [str(s.get("message") or "") for s in history if step_role(s) == "user"]
        if not said:
            return Action(message="Hello! How can I help you today?")
        numbers = [m for text in said for m in ORDER.findall(text)]
        if numbers:
            return Action(message=f"Your order {numbers[-1]} is refunded.", tool_calls=[ToolCall("refund", {"order_id": numbers[-1]})])
        return Action(message="Sure. What is your order number?")


def goal_card(env: Env) -> str:
    assert isinstance(env, ChatDeskEnv)
    return f"You bought a {ITEMS[env.order]} (order {env.order}) and want a refund. Give the order number only when asked."


META = EnvMeta(
    env="chatdesk",
    playable=True,
    anchors={"clerk": lambda env, seed: Clerk()},
    default_anchor="clerk",
    roles=(RoleSlot("user", default=lambda env, seed: RuleUser(env.order), description="the customer", brief=goal_card),),  # type: ignore[attr-defined]
)


def register() -> None:
    registry.list_tasks()  # load the real packages first, so the toy is an addition
    registry.register(TASK, ChatDeskEnv)
    registry.register_env(META)


@contextmanager
def chatdesk_registered() -> Iterator[None]:
    """Registers the toy's task and metadata for the block, and forgets them after."""
    register()
    try:
        yield
    finally:
        registry._TASKS.pop(TASK.id, None)
        registry._ENVS.pop(META.env, None)
