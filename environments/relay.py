"""Relay tasks: single-agent tasks chained into one harder, workflow-level episode (FloWright's data hardening).

    env = relay_env(("toolgym/lookup", "toolgym/chain", "toolgym/echo"), seed=7, stages=3)   # built and reset
    plan = relay_plan(env)       # the reference workflow (environments.workflow format): finder and reporter nodes
    record = run_workflow(env, ScriptedGenerator(plan), {"finder": f, "reporter": r})

Stages
    `stages` tasks drawn with replacement from `tasks` by a stream seeded with the relay seed; stage k plays its
    task with seed `seed * stages + k`, so disjoint ranges of relay seeds give disjoint stage seeds (a held-out
    relay never replays a training stage). A pure function of (tasks, stages, seed).

Dependencies
    Stage k+1 opens only once stage k is over and passed: its question arrives in the result of the call that
    ended stage k (`"next"`). The first stage that ends without passing ends the relay. So the team must pass every
    stage in order, in one shared context and budget: a harder task than any of its stages alone.

Tools
    The union of the stages' tools, by name in order of first appearance (stages of one environment share them).
    A call goes to the open stage, which answers it by its own rules (a tool it lacks is its error result).

Rewards
    composite = the mean of the stages' composites (a stage never opened counts 0); passed = every stage passed.
    Rewards arrive on the step that ends a stage: the stage's own reward divided by the number of stages.

Episode End
    Every stage passed ("agent_stop"), or a stage ended without passing (its own termination reason).

Arguments
    tasks: registered single-agent task ids; stages: how many are chained (1 to MAX_STAGES); seed.

The relay is built directly, not listed in the registry: its stages are data (made by `relay_env`), and every task
of the registry is offered to the lab's forms and the contract suite. Records name env "relay" and task
"<stages>-stage"; the stage list is in the header's "relay", so a record says what it played.

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random
from collections.abc import Sequence
from typing import Any

from environments.core import Action, Env, Observation, Policy, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.records import Header, Step
from environments.registry import get_task, make
from environments.workflow import DEFAULT_NODE_STEPS, WORKFLOW_FORMAT

MAX_STAGES = 8
FINDER, REPORTER = "finder", "reporter"
RELAY_ROLES = (FINDER, REPORTER)


class RelayEnv(Env):
    name = "relay"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        tasks, count = list(task.spec["tasks"]), int(task.spec["stages"])
        assert tasks and 1 <= count <= MAX_STAGES, f"relay: tasks {tasks!r}, stages {count!r}"
        rng = random.Random(f"relay/{','.join(tasks)}/{count}/{seed}")  # the relay's own stream
        self.stage_ids: list[tuple[str, int]] = [(rng.choice(tasks), seed * count + k) for k in range(count)]
        self.reset()

    def reset(self) -> Observation:
        self.stages: list[Env] = [make(task_id, stage_seed) for task_id, stage_seed in self.stage_ids]
        self.openings = [stage.reset().text for stage in self.stages]  # a second reset is the first's (the Env contract)
        self.current = 0
        self.failed = False
        return Observation(text=f"A relay of {len(self.stages)} stages: each opens when the one before is passed.\n{self._question(0)}")

    def _question(self, k: int) -> str:
        return f"Stage {k + 1} of {len(self.stages)}: {self.openings[k]}"

    def tools(self) -> list[ToolSpec]:
        seen: dict[str, ToolSpec] = {}
        for stage in self.stages:
            for spec in stage.tools():
                seen.setdefault(spec.name, spec)
        return list(seen.values())

    def step(self, call: ToolCall) -> StepResult:
        if self.done:
            return StepResult(content={"error": "the relay is over"}, is_error=True, done=True, termination_reason=self.termination_reason)
        k, stage = self.current, self.stages[self.current]
        result = stage.step(call)
        if not stage.done:
            return result
        score = stage.score()
        result.reward = result.reward / len(self.stages)
        content = result.content if isinstance(result.content, dict) else {"result": result.content}
        if not score.passed:
            self.failed = True
            result.content = {**content, "stage": f"{k + 1} of {len(self.stages)} failed: the relay ends"}
        elif k + 1 < len(self.stages):
            self.current = k + 1
            result.content = {**content, "stage": f"{k + 1} of {len(self.stages)} passed", "next": self._question(k + 1)}
        else:
            result.content = {**content, "stage": f"{k + 1} of {len(self.stages)} passed: the relay is done"}
        result.done, result.termination_reason = self.done, self.termination_reason
        return result

    def score(self) -> Score:
        composites = [stage.score().composite if stage.done else 0.0 for stage in self.stages]
        passed = [stage.done and stage.score().passed for stage in self.stages]
        value = sum(composites) / len(composites)
        components = {f"stage{k + 1}": c for k, c in enumerate(composites)}
        return Score(composite=value, passed=all(passed), components=components, termination_reason=self.termination_reason)

    @property
    def done(self) -> bool:
        return self.failed or all(stage.done for stage in self.stages)

    @property
    def termination_reason(self) -> str | None:
        if not self.done:
            return None
        if not self.failed:
            return "agent_stop"
        stage = self.stages[self.current]  # the score names the stage's own reason (toolgym's property keeps the default)
        return stage.score().termination_reason or stage.termination_reason

    @property
    def max_steps(self) -> int:
        return sum(stage_budget(stage) for stage in self.stages)

    def snapshot(self) -> bytes:
        return pickle.dumps((self.current, self.failed, [stage.snapshot() for stage in self.stages]))

    def restore(self, blob: bytes) -> None:
        self.current, self.failed, blobs = pickle.loads(blob)
        for stage, stage_blob in zip(self.stages, blobs, strict=True):
            stage.restore(stage_blob)

    def state_hash(self) -> str:
        state = [self.current, self.failed, [stage.state_hash() for stage in self.stages]]
        return hashlib.sha256(json.dumps(state).encode()).hexdigest()[:32]

    def summary(self) -> str:
        return f"stage {self.current + 1} of {len(self.stages)}; {self.stages[self.current].summary()}"

    def header(self) -> Header:
        return {**super().header(), "relay": [{"task": t, "seed": s} for t, s in self.stage_ids]}


def stage_budget(stage: Env) -> int:
    """The calls a stage allows: its task's `max_calls` (toolgym's budget) when it has one, else its max_steps."""
    return min(int(stage.task.spec.get("max_calls", stage.max_steps)), stage.max_steps)


def relay_env(tasks: Sequence[str], seed: int, *, stages: int = 2) -> RelayEnv:
    """The relay of `stages` stages drawn from `tasks` for `seed` (module docstring), reset. Raises ValueError naming
    the bad argument: an unknown task id, or a stage count outside 1..MAX_STAGES."""
    if not tasks:
        raise ValueError("tasks: give at least one single-agent task id")
    for task_id in tasks:
        get_task(task_id)  # EnvError (a ValueError) naming an unknown task
    if isinstance(stages, bool) or not isinstance(stages, int) or not 1 <= stages <= MAX_STAGES:
        raise ValueError(f"stages: expected a whole number from 1 to {MAX_STAGES}, got {stages!r}")
    spec = TaskSpec(
        env="relay",
        key=f"{stages}-stage",
        split="train",
        pass_threshold=1.0,
        spec={"tasks": list(tasks), "stages": stages},
        description=f"Pass {stages} tasks in a row; each opens when the one before is passed, and a failed one ends the relay.",
        horizon=f"{stages} stages",
    )
    return RelayEnv(spec, seed)


def relay_plan(env: RelayEnv) -> dict[str, Any]:
    """The reference workflow of a relay: per stage, a finder node for the calls that gather facts (every tool of the
    stage but its last; toolgym's shape: owner and lookup before answer) and a reporter node for the final call that
    depends on it; a one-tool stage (say) is one reporter node. Each stage's first node depends on the node that
    ended the stage before, so the plan's graph is the relay's own order."""
    nodes: list[dict[str, Any]] = []
    last: str | None = None
    count = len(env.stages)
    for k, stage in enumerate(env.stages, start=1):
        tools = [t.name for t in stage.tools()]
        finding, final = tools[:-1], tools[-1]
        if finding:
            nodes.append(
                {
                    "id": f"s{k}-find",
                    "role": FINDER,
                    "depends_on": [last] if last else [],
                    "max_steps": len(finding),
                    "instruction": f"Stage {k} of {count}: gather what the question needs with {', '.join(finding)}; do not answer.",
                }
            )
            last = f"s{k}-find"
        nodes.append(
            {
                "id": f"s{k}-{final}",
                "role": REPORTER,
                "depends_on": [last] if last else [],
                "max_steps": 1,
                "instruction": f"Stage {k} of {count}: finish the stage with {final}, using what was found.",
            }
        )
        last = f"s{k}-{final}"
    assert all(n["max_steps"] <= DEFAULT_NODE_STEPS for n in nodes)
    return {"format": WORKFLOW_FORMAT, "nodes": nodes}


class StageExpert(Policy):
    """A scripted relay player: toolgym's expert on the open stage, seeing that stage's question (the opening or the
    latest "next") and the results since. A stand-in for tests and demonstrations; it reads which stage is open from
    `env`, which the prompt also tells a model."""

    name = "relay-stage-expert"

    def __init__(self, env: RelayEnv) -> None:
        from environments.toolgym.anchors import ExpertPolicy

        self.env, self.expert = env, ExpertPolicy()

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        start, question = 0, self.env.openings[0]
        for i, step in enumerate(history):
            for result in step.get("results") or []:
                content = result.get("content")
                if isinstance(content, dict) and "next" in content:
                    start, question = i + 1, str(content["next"])
        view: list[Step] = [{"index": 0, "source": "env", "message": question}, *history[start:]]
        return self.expert.act(view, self.env.stages[self.env.current].tools())
