"""Roles: the parties of an episode beside the actor, as the record, the runner and the lab name them.

    step_role(step)                      # "actor" for an agent step without a role, "env" for an observation
    is_runner_call(call)                 # ask_critic / consult: answered by the runner, never sent to the env
    team = Team(actor=policy, critic=RoleSpec(policy=critic, every=5), harness_level="guided")

Every role is a Policy (environments.core): it receives the trajectory so far and answers an Action, whose
token ids and logprobs are recorded on its own step, so each role can be trained on its own turns.

- **actor**: acts in the environment (the only role of a plain episode).
- **user**: a simulated or human user in a conversational environment; the environment declares the slot
  (EnvMeta.roles) with its default policy, and an agent config may fill it with any other policy.
- **critic**: after chosen steps (every k actor steps, on the actor's `ask_critic` call, or when a trigger
  fires, e.g. a tool error) writes advice (Action.message) that enters the actor's context.
- **consultant**: answers the actor's `consult` call with a suggested next action (its Action's tool calls)
  and reasoning; each consultation costs `RoleSpec.cost`, which the episode's training reward subtracts.
- **harness**: the control decisions a harness level makes for the model (plan/todo tracker, what to
  investigate next, verification before finishing, the stop check), recorded so they can be supervised.
- **workflow roles** (generator, builder, executor, ...): any other lowercase name; see the workflow format.

A role's turn is a step of its own with `role` set (the step's `source` still says who produced it: agent,
user, human, system). Steps of the runner's own tools and of roles that do not act change nothing in the
environment, so replay only re-executes calls that reached the environment (`is_runner_call` is skipped).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from environments.core import Policy
from environments.records import Step

ACTOR, USER, CRITIC, CONSULTANT, HARNESS = "actor", "user", "critic", "consultant", "harness"
BUILTIN_ROLES = (ACTOR, USER, CRITIC, CONSULTANT, HARNESS)
ROLE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")  # built-in roles and workflow roles alike

# Tools the runner offers the actor on behalf of a role and answers itself; they never reach the environment.
ASK_CRITIC, CONSULT = "ask_critic", "consult"
RUNNER_TOOLS = (ASK_CRITIC, CONSULT)

# Harness levels, strongest first: what the harness does for the model (recorded as steps of role "harness").
#   full        a plan/todo tracker kept for the model, hints about what to investigate next, a verification
#               check before finishing, a stop check
#   guided      the tracker and the verification check
#   light       the stop check only
#   tools-only  nothing: the model sees the tools and their results
HARNESS_LEVELS = ("full", "guided", "light", "tools-only")


def step_role(step: Mapping[str, Any]) -> str:
    """The role a step belongs to; records written before roles existed have none: their agent steps are the actor's.
    A Step, or any mapping with its "source" and "role" (the lab reads them off table rows)."""
    role = step.get("role")
    if role:
        return str(role)
    return "env" if step.get("source") == "env" else ACTOR


def without_private_notes(steps: list[Step], viewer: str) -> list[Step]:
    """The steps as `viewer` may see them: a user's private reasoning (the note a model user writes before it
    speaks) is kept only in the user's own view; every other role gets those steps without it."""
    if viewer == USER:
        return steps
    return [{**step, "reasoning": None} if step_role(step) == USER and step.get("reasoning") else step for step in steps]


def is_runner_call(call: Mapping[str, Any]) -> bool:
    return call.get("name") in RUNNER_TOOLS


@dataclass
class RoleSpec:
    """One role of a team: its policy and when it takes a turn."""

    policy: Policy
    every: int = 0
    """critic: advise after every `every` actor steps (0: never on a schedule)."""
    on_request: bool = False
    """critic: the actor gets an `ask_critic` tool; consultant: the actor gets a `consult` tool (always on)."""
    on_error: bool = False
    """critic: advise after an actor step whose tool call failed."""
    cost: float = 0.0
    """consultant: what one consultation costs, subtracted from the episode's training reward (never its score)."""

    def __post_init__(self) -> None:
        problems = []
        if self.every < 0:
            problems.append(f"every must be >= 0, got {self.every}")
        if not 0.0 <= self.cost <= 1.0:
            problems.append(f"cost must be within [0, 1] (a share of the composite), got {self.cost}")
        assert not problems, "; ".join(problems)


@dataclass
class Team:
    """An actor and the roles around it. A plain episode is Team(actor=policy)."""

    actor: Policy
    critic: RoleSpec | None = None
    consultant: RoleSpec | None = None
    harness_level: str = "tools-only"
    slots: dict[str, Policy] = field(default_factory=dict)
    """Environment role slots (EnvMeta.roles) filled with another policy than the environment's default."""

    def __post_init__(self) -> None:
        assert self.harness_level in HARNESS_LEVELS, f"harness_level {self.harness_level!r} is not one of {HARNESS_LEVELS}"
        for name in self.slots:
            assert ROLE_NAME.fullmatch(name) and name not in (ACTOR, CRITIC, CONSULTANT, HARNESS), f"slot {name!r} is not a slot name"
