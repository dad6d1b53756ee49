"""EVOKE's data: one recorded state seen under its true goal and under K alternative goals, with the expert's action
under each goal as the candidate set.

    swap = goal_swap(record, step=2, alternatives=3, salt=0)    # a GoalSwap, or None when K distinct actions are not found
    swap.goals[0], swap.actions[0]                             # the record's own goal and the action it took
    swap.candidate(goal=1, action=0)                           # the state under goal 1 followed by goal 0's action

A state is the record up to (not including) an agent step: the prompt that turn was sampled from. The goal is
swapped in the FIRST observation only, by replacing the goal text with another goal's text (exactly one
occurrence, asserted); everything after it (the tool results the agent saw) stays the record's own. The system
prompt is the task's description (training.sampling.system_prompt_for), the same for every seed of a task, so
it never carries the goal. Where alternative goals come from:

- toolgym (lookup, echo, chain): the question of another seed of the same task, drawn from the same block of
  1,000 seeds (training seeds draw training seeds' questions). The first observation IS the question.
  `guess` has one goal for every seed and cannot be swapped.
- Phantom: another question of the same universe (another seed among the universe's `seeds_per_universe`); the
  question sits at the end of the first observation after the instructions, which are the same for all of them.

Candidates: the true goal's candidate is the recorded action; an alternative goal's is what the environment's
expert (toolgym's ExpertPolicy, Phantom's oracle for that question) does at the swapped state. Goals whose text
repeats one already drawn, or whose action repeats one already in the set, are redrawn, so every candidate
serves exactly one goal. Deterministic: the draws are a function of (task, seed, step, salt).

- service desk: the opening request of another seed of the same template (another customer's database and
  request of the same kind), which is the whole first observation. The desk's oracle is a phase machine (identify,
  find, verify, ..., confirm, act) that keeps its phase in itself, so its action at a mid-episode state is found by
  replaying it over the history first (`ReplayedExpert`: a fresh oracle acts on every earlier agent turn's prefix,
  then on the state); replayed over its own record it reproduces every recorded action. The caller's later turns
  stay the record's own, as Phantom's later results do, so the states that yield distinct actions are the
  decisions (what to change, what to refuse), not the identity questions every goal shares; a record gives few
  swaps (about one per two oracle episodes at 2 alternatives).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from environments.core import Env, Policy
from environments.records import Record, Step
from environments.registry import make
from environments.trajectory import make_step
from training.policies.roles import is_actor_turn

MAX_DRAWS_PER_ALTERNATIVE = 20
TOOLGYM_BLOCK = 1000


@dataclass(frozen=True)
class GoalSource:
    """How one environment states its goal and who acts on it."""

    goal: Callable[[Env], str]
    """The goal text as it appears in the first observation of a reset env."""
    expert: Callable[[Env, int], Policy]
    """The expert for an env (its goal) and seed."""
    block: Callable[[Env], int]
    """Alternative seeds come from the seed's block of this many seeds (Phantom: its universe)."""


def _toolgym() -> GoalSource:
    from environments.toolgym.anchors import ExpertPolicy
    from environments.toolgym.world import question

    return GoalSource(
        goal=lambda env: question(env.world),
        expert=lambda env, seed: ExpertPolicy(),  # type: ignore[attr-defined]
        block=lambda env: TOOLGYM_BLOCK,
    )


def _phantom() -> GoalSource:
    from environments.phantom.anchors import OraclePolicy

    return GoalSource(
        goal=lambda env: env.question.text,
        expert=lambda env, seed: OraclePolicy(env),  # type: ignore[attr-defined,arg-type]
        block=lambda env: env.config.seeds_per_universe,
    )  # type: ignore[attr-defined]


class ReplayedExpert(Policy):
    """A stateful expert acting at any state: a fresh one from `factory` acts on the prefix before each earlier actor
    turn of the history (its answers discarded, its phase advanced), then on the whole history. Quadratic in the
    turns; desk episodes have a few dozen."""

    name = "replayed-expert"

    def __init__(self, factory: Callable[[], Policy]) -> None:
        self.factory = factory

    def act(self, history: list[Step], tools: list[Any]) -> Any:
        expert = self.factory()
        for position, step in enumerate(history):
            if is_actor_turn(step, ("agent", "human")):
                expert.act(history[:position], tools)
        return expert.act(history, tools)


def _servicedesk() -> GoalSource:
    from environments.servicedesk.anchors import Oracle

    return GoalSource(
        goal=lambda env: env.opening,
        expert=lambda env, seed: ReplayedExpert(lambda: Oracle(env, seed)),  # type: ignore[attr-defined]
        block=lambda env: TOOLGYM_BLOCK,
    )


GOAL_SOURCES: dict[str, Callable[[], GoalSource]] = {"toolgym": _toolgym, "phantom": _phantom, "servicedesk": _servicedesk}
UNSWAPPABLE = ("toolgym/guess",)  # one goal for every seed


def swappable(task_id: str) -> str | None:
    """None when `task_id`'s goal can be swapped, else why not (for config validation)."""
    if task_id in UNSWAPPABLE:
        return "its goal is the same for every seed"
    if task_id.split("/")[0] not in GOAL_SOURCES:
        return f"goals are swapped only in {', '.join(GOAL_SOURCES)}"
    return None


def record_task(record: Record) -> tuple[str, int]:
    header = record["header"]
    task = str(header["task"])
    return (task if "/" in task else f"{header['env']}/{task}"), int(header["seed"])


def agent_step_indices(record: Record) -> list[int]:
    """Record step indices of the actor's turns: the states a goal swap can be built at."""
    return [s["index"] for s in record["steps"] if is_actor_turn(s, ("agent", "human"))]


def _action(step: Step) -> dict[str, Any]:
    calls = [{"id": c.get("id", ""), "name": c["name"], "arguments": c.get("arguments", {})} for c in step.get("tool_calls") or []]
    return {"message": step.get("message") or "", "tool_calls": calls}


def _key(action: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What makes two actions the same: the message and the calls' names and arguments (not their ids)."""
    return action["message"], tuple((c["name"], repr(sorted(c["arguments"].items()))) for c in action["tool_calls"])


def swap_goal(steps: list[Step], true_goal: str, goal: str) -> list[dict[str, Any]]:
    """A copy of `steps` whose first observation states `goal` instead of `true_goal` (nothing else changes)."""
    first = next(i for i, s in enumerate(steps) if s["source"] in ("env", "user"))
    text = str(steps[first]["message"])
    assert text.count(true_goal) == 1, f"the goal {true_goal!r} must occur once in the first observation, found {text.count(true_goal)}"
    out = list(steps)
    out[first] = {**steps[first], "message": text.replace(true_goal, goal)}
    return out


@dataclass
class GoalSwap:
    task: str
    seed: int
    step: int  # record step index of the agent turn the state precedes
    goals: list[str]  # goals[0] is the record's own goal, then the alternatives
    goal_seeds: list[int]  # the seed each goal comes from
    states: list[dict[str, Any]]  # per goal: the record cut before `step`, first observation stating that goal
    actions: list[dict[str, Any]]  # per goal: {"message", "tool_calls"}, the expert's action under that goal

    def candidate(self, goal: int, action: int) -> dict[str, Any]:
        """The record of state `goal` followed by candidate `action` as its last (agent) step, without results."""
        state = self.states[goal]
        step = make_step(index=self.step, source="agent", **self.actions[action])
        return {**state, "steps": [*state["steps"], step]}


def goal_swap(record: Record, *, step: int, alternatives: int, salt: int = 0) -> GoalSwap | None:
    """The record's state before agent step `step` under its own goal and `alternatives` others (module docstring);
    None when that many alternatives with distinct goals and distinct actions are not found in the draws."""
    task, seed = record_task(record)
    why = swappable(task)
    assert why is None, f"{task}: cannot swap goals ({why})"
    source = GOAL_SOURCES[task.split("/")[0]]()
    env = make(task, seed)
    true_goal = source.goal(env)
    position = next(i for i, s in enumerate(record["steps"]) if s["index"] == step)
    recorded = record["steps"][position]
    assert is_actor_turn(recorded, ("agent", "human")), f"{task} seed {seed}: step {step} is not an agent turn"
    prefix = record["steps"][:position]
    tools = env.tools()
    block = source.block(env)
    start = seed - seed % block
    rng = random.Random(f"evoke/{task}/{seed}/{step}/{salt}")
    goals, goal_seeds, actions = [true_goal], [seed], [_action(recorded)]
    states = [{**record, "steps": prefix}]
    seen_goals, seen_actions = {true_goal}, {_key(actions[0])}
    for _ in range(MAX_DRAWS_PER_ALTERNATIVE * alternatives):
        if len(goals) == alternatives + 1:
            break
        other_seed = start + rng.randrange(block)
        other = make(task, other_seed)
        goal = source.goal(other)
        if goal in seen_goals:
            continue
        steps = swap_goal(prefix, true_goal, goal)
        action = source.expert(other, other_seed).act(steps, tools)
        candidate = {
            "message": action.message or "",
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in action.tool_calls],
        }
        if _key(candidate) in seen_actions:
            continue
        seen_goals.add(goal)
        seen_actions.add(_key(candidate))
        goals.append(goal)
        goal_seeds.append(other_seed)
        actions.append(candidate)
        states.append({**record, "steps": steps})
    if len(goals) < alternatives + 1:
        return None
    return GoalSwap(task, seed, step, goals, goal_seeds, states, actions)


def swaps_for(records: list[Record], *, alternatives: int, salt: int = 0, limit: int | None = None) -> list[GoalSwap]:
    """Goal swaps at every agent step of `records`, in order (at most `limit`); steps without enough alternatives are left out."""
    out: list[GoalSwap] = []
    for record in records:
        for step in agent_step_indices(record):
            swap = goal_swap(record, step=step, alternatives=alternatives, salt=salt)
            if swap is not None:
                out.append(swap)
            if limit is not None and len(out) >= limit:
                return out
    return out
