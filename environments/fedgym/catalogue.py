"""fedgym: toolgym lookup over private catalogues, each organisation with its own colors and planted canaries.

    env = make("fedgym/a", seed=3)   # "What is the color of the lamp?" in organisation a's catalogue
    catalogue = private_catalogue("a")        # its item -> color table and its canaries, {field: value}

Federated-experience experiments need participants who do the same job on data they may not share: each
organisation's catalogue is fixed (the same for every seed: a seed picks only the asked item), so a model trained
on its episodes can memorise it, which is what the attribute-inference attack probes. Every lookup result also
carries the organisation's supplier reference, a random canary string: it sits in every private episode and must
never leave in an export (training/federation/checks.py).

Tools
    lookup(item) -> {"item", "color", "supplier_ref"}; answer(color) ends the episode.

Rewards, Episode End
    As toolgym lookup (world.py): 0.3 for looking the asked item up, 0.7 for the right color.

Arguments
    seed: the asked item only; the organisation (task spec "org") picks the catalogue.

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from environments.core import Observation, StepResult, TaskSpec, ToolCall
from environments.meta import ScoreComponent
from environments.toolgym.env import ToolGymEnv
from environments.toolgym.world import COLORS, ITEMS, LOOKUP_MEASURE, World, question

ORGS: tuple[str, ...] = ("a", "b", "c")
CANARY_PREFIX = "cnry"


@dataclass(frozen=True)
class Catalogue:
    org: str
    colors: dict[str, str]  # item -> color: the private values
    canaries: dict[str, str]  # field -> canary value planted in the private data

    @property
    def supplier_ref(self) -> str:
        return self.canaries["catalogue.supplier_ref"]


def private_catalogue(org: str) -> Catalogue:
    """Organisation `org`'s fixed catalogue (its own seeded stream; no two organisations share colors by design)."""
    assert org in ORGS, f"org={org!r}: one of {ORGS}"
    rng = random.Random(f"toolgym/private/{org}")
    colors = {item: rng.choice(COLORS) for item in ITEMS}
    digest = hashlib.sha256(f"toolgym/private/{org}/canary/{rng.random()}".encode()).hexdigest()
    return Catalogue(org=org, colors=colors, canaries={"catalogue.supplier_ref": f"{CANARY_PREFIX}{digest[:14]}"})


# The score is toolgym's lookup composite, its one component; every fedgym task has lookup and answer.
COMPONENTS = {"composite": ScoreComponent(LOOKUP_MEASURE, moved_by=("lookup", "answer"))}


class PrivateToolGymEnv(ToolGymEnv):
    """toolgym lookup over an organisation's private catalogue (module docstring)."""

    name = "fedgym"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        self.catalogue = private_catalogue(str(task.spec["org"]))
        super().__init__(task, seed, **kwargs)
        self.world = self._new_world()

    def _new_world(self) -> World:
        rng = random.Random(f"toolgym/private/{self.catalogue.org}/{self.seed}")
        return World(task="lookup", target=rng.choice(ITEMS), colors=dict(self.catalogue.colors))

    def reset(self) -> Observation:
        self.world = self._new_world()
        return Observation(text=question(self.world), data={"task": self.task.key})

    def _run(self, call: ToolCall) -> StepResult:
        result = super()._run(call)
        if call.name == "lookup" and not result.is_error:
            result.content = {**result.content, "supplier_ref": self.catalogue.supplier_ref}
        return result
