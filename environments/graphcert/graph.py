"""A Phantom world read as a knowledge graph: nodes are entities, edges are relations and attribute facts.

Every edge has one canonical text, `"<subject id> <relation or attribute> <object>"` (the object is an entity id
for a relation, the value for an attribute: "person:17 employer organisation:3", "person:17 birth_year 1843").
Tools show edges in this form and the agent cites them back in the same form, so a citation is checked by plain
string comparison. The graph is read-only: built once per universe and shared by its episodes.

Every query is bounded (results per call, nodes a path search may visit), so no argument makes a step slow.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from environments.phantom.scoring import normalise_answer
from environments.phantom.world import ATTRIBUTES, RELATIONS, Entity, World

MAX_RESULTS = 20  # edges or entities one call returns at most
PATH_VISIT_BUDGET = 5_000  # nodes a path search may expand before it gives up
OPS = ("eq", "lt", "gt")
# Attributes the world keeps beside the askable ones (world.py): a person's surname, an organisation's sector,
# an event's type. They are facts like any other, so a constrained anchor ("the poet surnamed Vasq") can be found.
EXTRA_ATTRIBUTES: dict[str, tuple[str, ...]] = {"person": ("family",), "organisation": ("sector",), "event": ("type",)}


def edge_text(subject: str, relation: str, obj: object) -> str:
    return f"{subject} {relation} {obj}"


def split_edge(text: str) -> tuple[str, str, str] | None:
    """(subject, relation, object) of an edge text, None when it has fewer than three parts."""
    parts = " ".join(text.split()).split(" ", 2)
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


@dataclass(frozen=True)
class Neighbour:
    edge: str
    name: str  # the other end's name, so the agent need not look every id up


class KnowledgeGraph:
    def __init__(self, world: World) -> None:
        self.entities: dict[str, Entity] = world.entities
        self.incoming: dict[str, list[tuple[str, str]]] = {eid: [] for eid in world.entities}  # object -> [(subject, relation)]
        for entity in world.entities.values():
            for relation, target in sorted(entity.rels.items()):
                self.incoming[target].append((entity.id, relation))
        self.by_name: dict[str, list[str]] = {}
        for entity in world.entities.values():
            for name in (entity.name, *entity.aliases):
                self.by_name.setdefault(normalise_answer(name), []).append(entity.id)

    # --- facts ----------------------------------------------------------------------------------------------

    def holds(self, text: str) -> bool:
        """Whether an edge text states a true relation or attribute of the world."""
        parts = split_edge(text)
        if parts is None or parts[0] not in self.entities:
            return False
        subject, relation, obj = parts
        entity = self.entities[subject]
        if relation in entity.rels:
            return entity.rels[relation] == obj
        return relation in entity.attrs and str(entity.attrs[relation]) == obj

    def facts(self, entity_id: str) -> list[str]:
        """The entity's attribute edges, in a fixed order."""
        entity = self.entities[entity_id]
        return [edge_text(entity_id, key, value) for key, value in sorted(entity.attrs.items())]

    # --- the tools' queries ---------------------------------------------------------------------------------

    def lookup(self, name: str, kind: str | None) -> list[str]:
        """Entities named `name` (canonical name or alias, normalised); else those whose name holds every word."""
        wanted = normalise_answer(name)
        exact = [e for e in self.by_name.get(wanted, []) if kind is None or self.entities[e].kind == kind]
        if exact:
            return exact[:MAX_RESULTS]
        words = set(wanted.split())
        found = []
        for entity in self.entities.values():
            if (kind is None or entity.kind == kind) and words and words <= set(normalise_answer(entity.name).split()):
                found.append(entity.id)
                if len(found) == MAX_RESULTS:
                    break
        return found

    def neighbours(self, entity_id: str, relation: str | None, direction: str) -> tuple[list[Neighbour], int]:
        """Edges at `entity_id` (out: it is the subject; in: the object), optionally of one relation; (first
        MAX_RESULTS, total)."""
        entity = self.entities[entity_id]
        found: list[Neighbour] = []
        if direction in ("out", "both"):
            for rel, target in sorted(entity.rels.items()):
                if relation in (None, rel):
                    found.append(Neighbour(edge_text(entity_id, rel, target), self.entities[target].name))
        if direction in ("in", "both"):
            for subject, rel in self.incoming[entity_id]:
                if relation in (None, rel):
                    found.append(Neighbour(edge_text(subject, rel, entity_id), self.entities[subject].name))
        return found[:MAX_RESULTS], len(found)

    def path(self, source: str, target: str, max_hops: int) -> list[str] | None:
        """A shortest chain of edges from `source` to `target` (edges in either direction, each stated as it holds),
        None when there is none within `max_hops` or the visit budget. Ties go to the lexicographically first."""
        parent: dict[str, tuple[str, str]] = {source: ("", "")}
        queue, visited = deque([(source, 0)]), 0
        while queue and visited < PATH_VISIT_BUDGET:
            node, depth = queue.popleft()
            visited += 1
            if node == target:
                edges = []
                while node != source:
                    previous, edge = parent[node]
                    edges.append(edge)
                    node = previous
                return edges[::-1]
            if depth == max_hops:
                continue
            steps = [(t, edge_text(node, r, t)) for r, t in self.entities[node].rels.items()]
            steps += [(s, edge_text(s, r, node)) for s, r in self.incoming[node]]
            for other, edge in sorted(steps):
                if other not in parent:
                    parent[other] = (node, edge)
                    queue.append((other, depth + 1))
        return None

    def filter(self, kind: str, conditions: list[tuple[str, str, str]]) -> tuple[list[str], int]:
        """Entities of `kind` meeting every (attribute, op, value) condition, by id; (first MAX_RESULTS, total).
        `eq` compares normalised text, `lt`/`gt` numbers (a non-numeric value never matches them)."""
        matches = [
            e.id for e in (self.entities[i] for i in sorted(self.entities)) if e.kind == kind and all(_meets(e, *c) for c in conditions)
        ]
        return matches[:MAX_RESULTS], len(matches)


def _meets(entity: Entity, attribute: str, op: str, value: str) -> bool:
    if attribute not in entity.attrs:
        return False
    actual = entity.attrs[attribute]
    if op == "eq":
        return normalise_answer(str(actual)) == normalise_answer(value)
    if not isinstance(actual, int) or not value.lstrip("-").isdigit():
        return False
    return actual < int(value) if op == "lt" else actual > int(value)


def schema() -> dict[str, dict[str, object]]:
    """Each kind's relations (with the kind they lead to) and attributes: the `relations` tool's answer."""
    attrs = {kind: sorted({*ATTRIBUTES[kind], *EXTRA_ATTRIBUTES.get(kind, ())}) for kind in ATTRIBUTES}
    return {
        kind: {"relations": {rel: target for (k, rel), target in sorted(RELATIONS.items()) if k == kind}, "attributes": attrs[kind]}
        for kind in ATTRIBUTES
    }
