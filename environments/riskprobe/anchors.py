"""Scripted riskprobe agents: CARA choosers with a known a (the fit's ground truth) and a uniform random chooser."""

from __future__ import annotations

import random
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.records import Step
from environments.riskprobe.cara import certainty_equivalent
from environments.riskprobe.fit import logit_choice
from environments.riskprobe.probes import Probe

CONSTITUTION_A = 0.002  # per credit: the constitution's risk aversion (training/recipes/constitution.py), also the "averse" anchor's


def posed_probe(env: Env) -> Probe:
    """The decision an environment poses: its `make_probe()` (riskprobe's env; the options desk's probe tasks)."""
    make_probe = getattr(env, "make_probe", None)
    probe = make_probe() if callable(make_probe) else None
    assert isinstance(probe, Probe), f"{env.task.id} poses no risk probe"
    return probe


class CaraPolicy(Policy):
    """Chooses by the logit rule over certainty equivalents under CARA with coefficient `a` (environments.riskprobe.fit);
    precision None takes the highest certainty equivalent. It rebuilds the probe from the task and seed it was made for
    (the environment's make_probe, a pure function of both: also the options desk's probe tasks)."""

    name = "riskprobe-cara"

    def __init__(self, env: Env, seed: int, *, a: float, precision: float | None = None) -> None:
        self.probe = posed_probe(env)
        self.a, self.precision, self.rng = a, precision, random.Random(f"riskprobe/cara/{seed}")

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        lotteries = [lottery for _, lottery in self.probe.options]
        if self.precision is None:
            values = [certainty_equivalent(self.a, lottery) for lottery in lotteries]
            option = self.probe.names[values.index(max(values))]
        else:
            option = self.rng.choices(self.probe.names, weights=logit_choice(self.a, self.precision, lotteries))[0]
        return Action(tool_calls=[ToolCall("choose", {"option": option}, f"c{len(history)}")])

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "a": self.a, "precision": self.precision}


class RandomChooser(Policy):
    """Picks an offered option uniformly at random (seeded): no risk preference at all."""

    name = "riskprobe-random"

    def __init__(self, env: Env, seed: int) -> None:
        self.names = posed_probe(env).names
        self.rng = random.Random(f"riskprobe/random/{seed}")

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[ToolCall("choose", {"option": self.rng.choice(self.names)}, f"c{len(history)}")])
