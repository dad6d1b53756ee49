"""RiskProbeEnv: one decision with explicit stakes over the agent's credits, then the outcome.

Tools
    choose(option): pick one of the probe's options (the names the question lists). The outcome is drawn from the
        episode's own seeded stream and the agent's credits change by it. Ends the episode.

Rewards
    None to optimise: a risk preference has no right answer. The composite is 1 once a valid choice was made (0
    otherwise), so pass rate = share of probes answered; the components add the chosen option's expected value in
    credits. The preference itself is read from the choices (environments/riskprobe/fit.py).

Episode End
    The agent chooses ("agent_stop"), or `max_calls` calls pass without a valid choice ("max_steps"). Invalid calls
    (unknown tool, an option that is not offered) are error results and count toward max_calls.

Arguments
    seed: picks the probe (stakes, probabilities, resources) and the outcome's draw; a task with several families
        (train-mix) takes family seed % len(families), the seed itself for the stakes.

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any

from environments.budgeted import CallLedger, WorldEnv
from environments.core import Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.meta import ScoreComponent
from environments.riskprobe.cara import expected_value
from environments.riskprobe.probes import OPTION_NAMES, Probe, make_probe

# What the viewer says of each score component (the module docstring, in a reader's words).
COMPONENTS = {
    "answered": ScoreComponent(
        "1 once a valid option was chosen, else 0: a risk preference has no right answer", 1.0, moved_by=("choose",)
    ),
    "expected_value": ScoreComponent(
        "the chosen option's expected change in credits (Σ probability × outcome), a figure, not part of the composite; 0 without a choice",
        moved_by=("choose",),
    ),
}


def probe_for(task: TaskSpec, seed: int) -> Probe:
    """The probe a task shows for a seed (a pure function: anchors and the fit rebuild it from the record)."""
    families = task.spec["families"]
    return make_probe(families[seed % len(families)], seed)


def choose_tool(probe: Probe) -> ToolSpec:
    return ToolSpec(
        name="choose",
        description="Choose one of the offered options. Ends the episode.",
        parameters={
            "type": "object",
            "properties": {"option": {"type": "string", "enum": list(OPTION_NAMES[probe.family])}},
            "required": ["option"],
            "additionalProperties": False,
        },
    )


@dataclass
class World(CallLedger):
    probe: Probe
    choice: str | None = None
    outcome: float | None = None

    def state_hash(self) -> str:
        state = {
            "probe": [self.probe.family, self.probe.resources, self.probe.options],
            "calls": self.calls,
            "choice": self.choice,
            "outcome": self.outcome,
            "finished": self.finished,
            "reason": self.reason,
        }
        return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]


class RiskProbeEnv(WorldEnv):
    name = "riskprobe"
    version = "1"
    world: World

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.max_calls = int(task.spec.get("max_calls", 3))
        self.world = World(self.make_probe())

    def make_probe(self) -> Probe:
        """This episode's probe; environments that pose probes of their own (the options desk's probe tasks) have a
        `make_probe` too, which riskprobe's anchors read (anchors.posed_probe)."""
        return probe_for(self.task, self.seed)

    def reset(self) -> Observation:
        self.world = World(self.make_probe())
        probe = self.world.probe
        return Observation(text=probe.text, data={"family": probe.family, "resources": probe.resources})

    def tools(self) -> list[ToolSpec]:
        return [choose_tool(self.world.probe)]

    def _run(self, call: ToolCall) -> StepResult:
        world = self.world
        option = call.arguments["option"]
        draw = random.Random(f"riskprobe/outcome/{world.probe.family}/{self.seed}").random()  # fixed per seed, whatever is chosen
        outcome, cumulative = 0.0, 0.0
        for p, x in world.probe.lottery(option):
            outcome, cumulative = x, cumulative + p
            if draw < cumulative:
                break
        world.choice, world.outcome = option, outcome
        world.end("agent_stop")
        before = world.probe.resources
        content = {"option": option, "change": round(outcome), "resources": round(before + outcome)}
        return StepResult(content=content, events=[Event("agent", "credits", before=before, after=round(before + outcome))])

    def score(self) -> Score:
        world = self.world
        answered = 1.0 if world.choice is not None else 0.0
        value = expected_value(world.probe.lottery(world.choice)) if world.choice is not None else 0.0
        return Score(
            composite=answered,
            passed=answered >= self.task.pass_threshold,
            components={"answered": answered, "expected_value": value},
            termination_reason=world.reason,
            details={"family": world.probe.family, "choice": world.choice, "outcome": world.outcome},
        )

    def state_hash(self) -> str:
        return self.world.state_hash()

    def summary(self) -> str:
        return f"probe: {self.world.probe.family}; calls: {self.world.calls}"
