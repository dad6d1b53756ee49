"""Phantom demonstrations for SFT, restricted by question kind: the data builder of the phantom_transfer experiment.

    path = phantom_demonstrations_file(PhantomDemoConfig(questions="comparison", episodes=64))

An anchor plays a Phantom TRAINING task seed after seed; an episode is kept when it passed and its question is of
the kind `questions` asks for, until `episodes` are kept (or `max_seeds` seeds were tried). Question kinds come
from the question itself (environments/phantom/questions.py): `hops` (articles per chain), `kind` (chain |
comparison) and `constrained` (the anchor person named only by occupation and surname):

- all: every question;
- many_hops: chain questions of at least `min_hops` hops, neither constrained nor comparisons;
- constraint: constrained chain questions (any hop count);
- comparison: comparisons (any hop count; a constrained side is allowed, as the task draws them).

The exclusions keep the three restricted sets apart, so an arm trained on one kind sees none of the other two.
Each kept record carries the question's tags in `header.meta` (`hops`, `question_kind`, `constrained`). Files are
written once under var/experiments/data/, named by the config's hash, so a change of config makes a new file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from environments.records import record_score
from training.config import ConfigError

QUESTION_FILTERS = ("all", "many_hops", "constraint", "comparison")


@dataclass(frozen=True)
class PhantomDemoConfig:
    task: str = "phantom/mixed-train"
    """The Phantom task whose seeds are played; training split only (dev and test universes stay unseen)."""
    anchor: str = "multisearch"
    """The demonstrator: multisearch (reads and searches, no privileged access) or oracle (follows the gold chain)."""
    questions: str = "all"
    """Which questions to keep: all | many_hops | constraint | comparison (module docstring)."""
    min_hops: int = 3
    """many_hops keeps chain questions with at least this many hops (1-4)."""
    episodes: int = 64
    """Passed episodes to keep."""
    seed_start: int = 30_000
    """First seed played; seeds run up from here (far from the zoo's SFT seeds 0+ and corpus seeds 10,000+)."""
    max_seeds: int = 4_000
    """Seeds tried at most; fewer kept episodes than `episodes` after that is an error."""
    max_turns: int = 24
    """Agent turns per episode (the mixed task's budget)."""

    def __post_init__(self) -> None:
        problems = []
        if not self.task.startswith("phantom/") or not self.task.endswith("-train"):
            problems.append(f"task={self.task!r}: must be a phantom training task (phantom/<level>-train)")
        if self.anchor not in ("multisearch", "oracle"):
            problems.append(f"anchor={self.anchor!r}: must be multisearch or oracle")
        if self.questions not in QUESTION_FILTERS:
            problems.append(f"questions={self.questions!r}: must be one of {', '.join(QUESTION_FILTERS)}")
        if not 1 <= self.min_hops <= 4:
            problems.append(f"min_hops={self.min_hops!r}: must be 1-4")
        for name in ("episodes", "max_seeds", "max_turns"):
            if getattr(self, name) < 1:
                problems.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.seed_start < 0:
            problems.append(f"seed_start={self.seed_start!r}: must not be negative")
        if problems:
            raise ConfigError("PhantomDemoConfig: " + "; ".join(problems), [p.split("=", 1)[0] for p in problems])


def question_tags(question: Any) -> dict[str, Any]:
    return {"hops": int(question.hops), "question_kind": str(question.kind), "constrained": bool(question.constrained)}


def question_matches(tags: dict[str, Any], config: PhantomDemoConfig) -> bool:
    """Whether a question with these tags belongs to the config's `questions` set (module docstring)."""
    chain = tags["question_kind"] == "chain"
    if config.questions == "many_hops":
        return chain and not tags["constrained"] and tags["hops"] >= config.min_hops
    if config.questions == "constraint":
        return chain and bool(tags["constrained"])
    if config.questions == "comparison":
        return not chain
    return True


def phantom_demonstrations(config: PhantomDemoConfig) -> list[dict[str, Any]]:
    """The kept records (module docstring), in seed order."""
    from environments.policies import make_policy
    from environments.registry import make
    from training.scripted import scripted_episode

    kept: list[dict[str, Any]] = []
    for seed in range(config.seed_start, config.seed_start + config.max_seeds):
        tags = question_tags(make(config.task, seed).question)  # cheap: the universe is cached, the question drawn
        if not question_matches(tags, config):
            continue
        record = scripted_episode(make_policy(config.anchor, make(config.task, seed), seed), config.task, seed, max_turns=config.max_turns)
        if record_score(record)["passed"]:
            record["header"]["meta"] = {**(record["header"].get("meta") or {}), **tags}
            kept.append(record)
            if len(kept) == config.episodes:
                return kept
    raise ValueError(
        f"only {len(kept)} of {config.episodes} {config.questions} episodes passed in {config.max_seeds} seeds of {config.task}"
    )


def phantom_demonstrations_file(config: PhantomDemoConfig) -> str:
    """phantom_demonstrations(config) as JSONL under var/experiments/data/, written once; returns its path."""
    from training.zoo.build import var_root

    digest = hashlib.sha256(json.dumps(dataclasses.asdict(config), sort_keys=True).encode()).hexdigest()[:10]
    path = var_root() / "experiments" / "data" / f"phantom-demos-{config.questions}-{digest}.jsonl"
    if not path.exists():
        records = phantom_demonstrations(config)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        partial.rename(path)  # a file under this name is always complete
    return str(path)
