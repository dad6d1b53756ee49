"""Step dependency graph and graph credit: which steps' effects the rest of the episode was built on.

    graph = dependency_graph(record["steps"], env="storebench")    # edge i -> j when step j read state i wrote
    credit = stationary_credit(graph, damping=0.85)                # {step index: credit}, sums to 1
    best = top_steps(credit, fraction=0.2)                         # the most important steps, by credit

Edges come from the environment's own events (core.Event): a "read" of an entity links to the step that last
wrote that entity before the read (earlier, overwritten writes were not what the reader saw). Entities are
"kind:id" strings; a wildcard id ("orders:*") reads or writes the whole kind. Kinds are compared singular
("skus" and "sku" are one kind), and an environment may alias kinds that name the same state
(StoreBench's "inventory" listing shows the sku stock levels).

Credit is PageRank on the reversed edges: a random walker at a step moves, with probability `damping`, to one
of the steps it read from (in proportion to how many entities it read from each), and otherwise teleports
(uniformly, or by a personalisation vector). Steps with no dependencies teleport always. A step whose writes
are read, directly or through later steps, by much of the episode collects a large share of the stationary
distribution. Power iteration in pure Python: O(iterations x edges), fine for episodes of thousands of steps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from environments.diagnosis.taxonomy import AGENT_SOURCES
from environments.records import Step

# Per environment: kind aliases (after singularisation). Keep this the only env-specific knowledge here.
ENTITY_ALIASES: dict[str, dict[str, str]] = {"storebench": {"inventory": "sku"}}


@dataclass
class StepGraph:
    """Nodes are the record's agent step indices; `edges[(i, j)]` counts the entities j read from i's writes."""

    nodes: list[int]
    edges: dict[tuple[int, int], int] = field(default_factory=dict)

    def writers_of(self, reader: int) -> dict[int, int]:
        return {i: w for (i, j), w in self.edges.items() if j == reader}

    def as_json(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes), "edges": [[i, j, w] for (i, j), w in sorted(self.edges.items())]}


def entity_kind(entity: str, aliases: Mapping[str, str] | None = None) -> tuple[str, str]:
    """("order", "17") for "order:17"; ("order", "*") for "orders:*"; ("clock", "") for "clock"."""
    kind, _, ident = str(entity).partition(":")
    kind = kind.strip().lower()
    if len(kind) > 2 and kind.endswith("s") and not kind.endswith("ss"):
        kind = kind[:-1]
    if aliases:
        kind = aliases.get(kind, kind)
    return kind, ident


def dependency_graph(steps: Iterable[Step], *, env: str | None = None, aliases: Mapping[str, str] | None = None) -> StepGraph:
    """Edges i -> j (i < j) whenever agent step j read an entity whose last write before j was step i's."""
    alias_map = dict(ENTITY_ALIASES.get(env or "", {}))
    alias_map.update(aliases or {})
    last_writer: dict[str, dict[str, int]] = defaultdict(dict)  # kind -> id -> step that last wrote it
    graph = StepGraph(nodes=[])
    for step in steps:
        if step.get("source") not in AGENT_SOURCES:
            continue
        j = int(step["index"])
        graph.nodes.append(j)
        events = step.get("events") or []
        for event in events:
            if event.get("op", "write") != "read":
                continue
            kind, ident = entity_kind(event.get("entity", ""), alias_map)
            written = last_writer.get(kind, {})
            if ident == "*":
                writers = set(written.values())
            else:
                writers = {w for w in (written.get(ident), written.get("*")) if w is not None}
            for i in writers:
                if i != j:
                    graph.edges[(i, j)] = graph.edges.get((i, j), 0) + 1
        for event in events:  # writes after reads: a step that reads and writes an entity depends on its earlier writer
            if event.get("op", "write") == "write":
                kind, ident = entity_kind(event.get("entity", ""), alias_map)
                last_writer[kind][ident] = j
    return graph


def stationary_credit(
    graph: StepGraph,
    *,
    damping: float = 0.85,
    personalization: Mapping[int, float] | None = None,
    tol: float = 1e-12,
    max_iter: int = 1000,
) -> dict[int, float]:
    """The stationary distribution of the damped walk described in the module docstring; sums to 1."""
    assert 0.0 <= damping < 1.0, f"damping must be in [0, 1), got {damping}"
    nodes = graph.nodes
    if not nodes:
        return {}
    if personalization:
        total = sum(max(0.0, float(personalization.get(n, 0.0))) for n in nodes)
        assert total > 0, "personalization gives no mass to any step of the graph"
        teleport = {n: max(0.0, float(personalization.get(n, 0.0))) / total for n in nodes}
    else:
        teleport = {n: 1.0 / len(nodes) for n in nodes}
    # The walk goes from a reader j to its writers i; out-weight of j is the sum of its incoming edges.
    out_weight: dict[int, float] = defaultdict(float)
    moves: dict[int, list[tuple[int, float]]] = defaultdict(list)  # writer i <- [(reader j, w)]
    for (i, j), w in graph.edges.items():
        out_weight[j] += w
        moves[i].append((j, float(w)))
    dangling = [n for n in nodes if out_weight.get(n, 0.0) == 0.0]
    rank = dict(teleport)
    for _ in range(max_iter):
        spill = damping * sum(rank[n] for n in dangling) + (1.0 - damping)
        updated = {n: spill * teleport[n] + damping * sum(rank[j] * w / out_weight[j] for j, w in moves.get(n, ())) for n in nodes}
        change = sum(abs(updated[n] - rank[n]) for n in nodes)
        rank = updated
        if change < tol:
            break
    total = sum(rank.values())
    return {n: rank[n] / total for n in nodes}


def step_credit(steps: list[Step], *, env: str | None = None, damping: float = 0.85) -> dict[int, float]:
    """Graph credit of every agent step of a record's steps (the one call most callers need)."""
    return stationary_credit(dependency_graph(steps, env=env), damping=damping)


def top_steps(credit: Mapping[int, float], *, fraction: float | None = None, count: int | None = None) -> list[int]:
    """Step indices with the highest credit, in step order: the top `count`, or the top `fraction` (at least one)."""
    assert (fraction is None) != (count is None), "give exactly one of fraction or count"
    if fraction is not None:
        assert 0.0 < fraction <= 1.0, f"fraction must be in (0, 1], got {fraction}"
        count = max(1, round(fraction * len(credit))) if credit else 0
    assert count is not None and count >= 0, f"count must be >= 0, got {count}"
    ranked = sorted(credit, key=lambda n: (-credit[n], n))
    return sorted(ranked[:count])
