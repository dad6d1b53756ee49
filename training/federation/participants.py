"""A federation's participants: each one's private records, canaries and the private values its exports must not
reveal. `fedgym_participants` builds three organisations over environments/fedgym (private toolgym catalogues).

    people = fedgym_participants(["a", "b", "c"], records=32, holdout=16)
    people[0].records      # expert episodes on fedgym/a's train seeds: the private data the participant trains on
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.records import Record, Step
from training.federation.checks import AttributeCase
from training.federation.redact import PrivateRedactor

HOLDOUT_SEED_START = 500_000  # non-member records (membership inference) come from here on
PROBE_SEED_START = 900_000  # the attribute attack's answer records


@dataclass
class Participant:
    name: str
    task: str  # the task its utility is measured on (its own private variant)
    records: list[Record]  # what it trains on; never leaves
    holdout: list[Record] = field(default_factory=list)  # same task, never trained on: membership non-members
    canaries: dict[str, str] = field(default_factory=dict)  # field -> planted canary
    private_values: list[tuple[str, str]] = field(default_factory=list)  # (field, value) the redactor replaces
    attributes: list[AttributeCase] = field(default_factory=list)  # what the attribute attack tries to recover
    candidate_values: list[str] = field(default_factory=list)  # the attribute's possible values
    share: tuple[str, ...] = ("adapter", "skills", "stats")  # the artifact kinds its sharing policy allows

    @property
    def redactor(self) -> PrivateRedactor:
        return PrivateRedactor([*self.canaries.items(), *self.private_values])

    @property
    def canary_contexts(self) -> dict[str, list[Record]]:
        """Per canary, the private records that hold it (the extraction attack's contexts)."""
        import json

        return {name: [r for r in self.records if value in json.dumps(r)][:2] for name, value in self.canaries.items()}


class _Answer(Policy):
    """Answers at once with a fixed color: the attribute attack's candidate records."""

    name = "attribute-probe"

    def __init__(self, color: str) -> None:
        self.color = color

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[ToolCall("answer", {"color": self.color}, "c1")])


def _seed_asking(task: str, item: str) -> int:
    from environments.registry import make

    for seed in range(PROBE_SEED_START, PROBE_SEED_START + 10_000):
        env = make(task, seed)
        env.reset()
        if env.world.target == item:  # type: ignore[attr-defined]
            return seed
    raise AssertionError(f"no seed of {task} asks for {item!r}")


def private_facts(task: str) -> dict[str, Any]:
    """What the leakage checks know of `task`'s private data, as Participant fields: for a fedgym task its private
    catalogue's values (the redactor's), attribute cases (each item's private color, with an answer record per
    candidate color) and the candidate colors; for any other task nothing (the gate then runs canaries and membership
    only, and says so)."""
    from environments.fedgym import ORGS, private_catalogue
    from environments.toolgym.world import COLORS
    from training.scripted import scripted_episode

    env_name, _, org = task.partition("/")
    if env_name != "fedgym" or org not in ORGS:
        return {}
    catalogue = private_catalogue(org)
    attributes = []
    for item, color in catalogue.colors.items():
        seed = _seed_asking(task, item)
        candidates = tuple((c, scripted_episode(_Answer(c), task, seed, max_turns=1)) for c in COLORS)
        attributes.append(AttributeCase(key=item, true=color, candidates=candidates))
    return {
        "private_values": [("catalogue.color", c) for c in sorted(set(catalogue.colors.values()))],
        "attributes": attributes,
        "candidate_values": list(COLORS),
    }


def fedgym_participants(orgs: Sequence[str], *, records: int, holdout: int, seed_start: int = 0) -> list[Participant]:
    """One participant per organisation: `records` expert episodes from seed_start on, `holdout` more for membership."""
    from environments.fedgym import private_catalogue
    from environments.toolgym.anchors import ExpertPolicy
    from training.scripted import scripted_episodes

    out = []
    for org in orgs:
        task = f"fedgym/{org}"
        out.append(
            Participant(
                name=org,
                task=task,
                records=scripted_episodes(ExpertPolicy(), task, range(seed_start, seed_start + records)),
                holdout=scripted_episodes(ExpertPolicy(), task, range(HOLDOUT_SEED_START, HOLDOUT_SEED_START + holdout)),
                canaries=dict(private_catalogue(org).canaries),
                **private_facts(task),
            )
        )
    return out
