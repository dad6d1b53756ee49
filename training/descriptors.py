"""Trajectory descriptors: what an episode did, read from its record, and how far apart two episodes are.

    d = describe(record)           # Descriptor(tools, subgoals, reasoning_chars, sources)
    distance(d, e)                 # in [0, 1]: 0 for the same behaviour, 1 for nothing in common
    group_diversity([d, e, f])     # mean pairwise distance

What a descriptor reads (the actor's agent steps only; the user's and the environment's steps are skipped):
    tools            one entry per agent turn in order: the names of the calls the environment executed, or "-"
                     for a turn whose output was not a valid action (meta.invalid_action: nothing reached the env).
    subgoals         the order in which sub-goals were first reached. A sub-goal is the `field` of a write event
                     (toolgym/chain: owner() writes "owns", lookup() writes "color", answer() writes "answer"), so
                     the rule needs no per-environment code; a step with a positive reward and no write event
                     reaches "reward:<its first tool>" (environments that pay per step instead of logging events).
    reasoning_chars  characters the agent wrote besides its calls: every agent step's message and reasoning.
    sources          the information the agent took in: "name(arguments)" of every call whose result was not an
                     error (distinct arguments count as distinct sources; the same call twice counts once).

distance(a, b) is the unweighted mean of four parts, each in [0, 1]:
    normalised edit distance of the tool sequences (Levenshtein / longer length),
    normalised edit distance of the sub-goal sequences (order matters: owns->color vs color->owns differ),
    Jaccard distance of the sources (1 − |A ∩ B| / |A ∪ B|),
    relative reasoning-length difference |a − b| / max(a, b).
Two empty parts (both sequences empty, both lengths 0) are at distance 0.

The group helpers (distance_to_others, diversity_bonus, grouped_diversity) take any distance: `embedding_distance`
compares learned trajectory embeddings instead (TJPO's `diversity_representation="policy"`, training/recipes/grpo.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import torch

from environments.records import Record
from environments.roles import ACTOR, step_role

INVALID_TURN = "-"


@dataclass(frozen=True)
class Descriptor:
    tools: tuple[str, ...]
    """Tool names per agent turn in order ("-" for a turn that was not a valid action)."""
    subgoals: tuple[str, ...]
    """Sub-goals in the order first reached (write-event fields; "reward:<tool>" for a rewarded step without events)."""
    reasoning_chars: int
    """Characters of the agent's messages and reasoning."""
    sources: frozenset[str]
    """"name(arguments)" of each call whose result the agent read (not an error)."""


def _call_key(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments)
    return f"{call.get('name')}({text})"


def describe(record: Record) -> Descriptor:
    """The record's descriptor (module docstring)."""
    tools: list[str] = []
    subgoals: list[str] = []
    sources: set[str] = set()
    chars = 0
    for step in record.get("steps", []):
        if step.get("source") != "agent" or step_role(step) != ACTOR:
            continue
        chars += len(step.get("message") or "") + len(step.get("reasoning") or "")
        calls = step.get("tool_calls") or []
        if (step.get("meta") or {}).get("invalid_action") or not calls:
            tools.append(INVALID_TURN)
            continue
        tools.extend(str(c.get("name")) for c in calls)
        failed = {r.get("call_id") for r in step.get("results") or [] if r.get("is_error")}
        sources.update(_call_key(c) for c in calls if c.get("id") not in failed)
        writes = [e.get("field") for e in step.get("events") or [] if e.get("op", "write") == "write"]
        if not writes and (step.get("reward") or 0.0) > 0:
            writes = [f"reward:{calls[0].get('name')}"]
        subgoals.extend(str(w) for w in writes if w not in subgoals)
    return Descriptor(tuple(tools), tuple(subgoals), chars, frozenset(sources))


def edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance (insert, delete, substitute: cost 1 each); O(len(a)·len(b)), fine for short episodes."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _normalised_edit(a: Sequence[str], b: Sequence[str]) -> float:
    longest = max(len(a), len(b))
    return edit_distance(a, b) / longest if longest else 0.0


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def _relative(a: int, b: int) -> float:
    largest = max(a, b)
    return abs(a - b) / largest if largest else 0.0


def distance_parts(a: Descriptor, b: Descriptor) -> dict[str, float]:
    """The four parts of `distance`, each in [0, 1]."""
    return {
        "tools": _normalised_edit(a.tools, b.tools),
        "subgoals": _normalised_edit(a.subgoals, b.subgoals),
        "sources": _jaccard(a.sources, b.sources),
        "reasoning": _relative(a.reasoning_chars, b.reasoning_chars),
    }


def distance(a: Descriptor, b: Descriptor) -> float:
    """Mean of the four parts (module docstring): symmetric, 0 for equal descriptors, in [0, 1]."""
    parts = distance_parts(a, b)
    return sum(parts.values()) / len(parts)


Distance = Callable[[Any, Any], float]


def embedding_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """(1 − cosine similarity) / 2 of two trajectory embeddings (`policy_embeddings` in training/recipes/grpo.py): in
    [0, 1], 0 for the same direction, as `distance` is for descriptors."""
    cosine = torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=0)
    return float(((1.0 - cosine) / 2.0).clamp(0.0, 1.0))


def group_diversity(descriptors: Sequence[Any], dist: Distance = distance) -> float:
    """Mean pairwise distance; 0 for fewer than two descriptors."""
    pairs = [dist(a, b) for a, b in combinations(descriptors, 2)]
    return sum(pairs) / len(pairs) if pairs else 0.0


def distance_to_others(descriptors: Sequence[Any], dist: Distance = distance) -> list[float]:
    """For each descriptor (or embedding, with `dist`), its mean distance to the others (0 when it has none)."""
    n = len(descriptors)
    if n < 2:
        return [0.0] * n
    table = [[0.0] * n for _ in range(n)]
    for i, j in combinations(range(n), 2):
        table[i][j] = table[j][i] = dist(descriptors[i], descriptors[j])
    return [sum(row) / (n - 1) for row in table]


def diversity_bonus(
    descriptors: Sequence[Any], succeeded: Sequence[bool], group_ids: Sequence[Any], dist: Distance = distance
) -> torch.Tensor:
    """(N,): each successful rollout's mean distance to the other members of its group; 0 for failed rollouts and
    groups of one. The caller scales it by diversity_coef and adds it to the advantages."""
    assert len(descriptors) == len(succeeded) == len(group_ids), (
        f"{len(descriptors)} descriptors, {len(succeeded)} outcomes, {len(group_ids)} group ids"
    )
    bonus = torch.zeros(len(descriptors))
    for key in dict.fromkeys(group_ids):
        members = [i for i, k in enumerate(group_ids) if k == key]
        for i, d in zip(members, distance_to_others([descriptors[i] for i in members], dist), strict=True):
            bonus[i] = d if succeeded[i] else 0.0
    return bonus


def grouped_diversity(descriptors: Sequence[Any], group_ids: Sequence[Any], dist: Distance = distance) -> float:
    """Mean over groups of each group's mean pairwise distance (groups of one are left out); 0 when none is left."""
    values = []
    for key in dict.fromkeys(group_ids):
        members = [descriptors[i] for i, k in enumerate(group_ids) if k == key]
        if len(members) > 1:
            values.append(group_diversity(members, dist))
    return sum(values) / len(values) if values else 0.0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c passed: 1 − C(n−c, k) / C(n, k) (Chen et al. 2021)."""
    assert 0 <= c <= n and 1 <= k <= n, f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}"
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)
