"""Certified questions: a Phantom question together with the evidence subgraph that proves its answer.

The certificate is the question's chain read as graph edges (each hop's relation, the asked attribute, and for a
constrained anchor the two facts that single the person out: occupation and surname) plus the nodes they touch.
`verify` checks it independently of how it was made: it parses the question text (phantom's reader, which knows
only the public phrasings), resolves the anchor, follows exactly the relations the question names through the
certificate's edges, and requires that (1) every edge holds in the world, (2) the derivation reaches the gold
answer (for a comparison: the winner by the question's own direction), (3) a constrained anchor is the only
person with that occupation and surname, and (4) every edge is used, so the certificate is a proof with nothing
padded in. `certified_question` redraws until a question passes, so every task carries a verified certificate.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.graphcert.graph import KnowledgeGraph, edge_text, split_edge
from environments.phantom.questions import Question
from environments.phantom.reading import Description, parse_question
from environments.phantom.scoring import normalise_answer
from environments.phantom.universe import Universe

MAX_DRAWS = 50


@dataclass(frozen=True)
class Certificate:
    edges: tuple[str, ...]  # edge texts (graph.edge_text), in proof order
    nodes: tuple[str, ...]  # entity ids the edges touch, in first-seen order


def certificate_of(question: Question, graph: KnowledgeGraph) -> Certificate:
    """The certificate read off a question's gold chain (see the module docstring)."""
    edges = [edge_text(hop.entity, hop.field, hop.value) for hop in question.chain]
    if question.constrained:  # the anchor of the chain (of the first side, for a comparison) is chain[0]'s entity
        anchor = graph.entities[question.chain[0].entity]
        edges = [
            edge_text(anchor.id, "occupation", anchor.attrs["occupation"]),
            edge_text(anchor.id, "family", anchor.attrs["family"]),
            *edges,
        ]
    nodes: list[str] = []
    for text in edges:
        subject, field, value = split_edge(text) or ("", "", "")
        is_relation = field in graph.entities[subject].rels
        nodes += [n for n in (subject, value if is_relation else "") if n and n not in nodes]
    return Certificate(tuple(edges), tuple(nodes))


def verify(question: Question, certificate: Certificate, graph: KnowledgeGraph) -> list[str]:
    """Problems with the certificate as a proof of the question's answer; [] when it proves it."""
    problems = [f"edge {e!r} does not hold in the world" for e in certificate.edges if not graph.holds(e)]
    plan = parse_question(question.text)
    if plan is None:
        return [*problems, f"the question {question.text!r} fits no known phrasing"]
    used: set[str] = set()
    ends = [_follow(side, certificate, graph, used, problems) for side in plan.sides]
    if any(end is None for end in ends):
        return problems
    derived: str | None = None
    if plan.ask == "entity":
        assert plan.final is not None and ends[0] is not None
        target = _edge_object(ends[0], plan.final[1], certificate, used)
        derived = graph.entities[target].name if target in graph.entities else None
    elif plan.ask == "attribute":
        assert ends[0] is not None
        kind = graph.entities[ends[0]].kind  # "founded" may ask a city or an organisation: the end's kind decides
        fields = [a for k, a in plan.attribute if k == kind]
        derived = _edge_object(ends[0], fields[0], certificate, used) if fields else None
    else:
        ((_, attribute),) = plan.attribute
        values = [_edge_object(end or "", attribute, certificate, used) for end in ends]
        if all(v is not None and v.isdigit() for v in values) and values[0] != values[1]:
            a, b = (int(v or 0) for v in values)
            winner = ends[0] if (a < b) == plan.smaller_wins else ends[1]
            derived = graph.entities[winner or ""].name
    if derived is None or normalise_answer(derived) != normalise_answer(question.answer):
        problems.append(f"the certificate derives {derived!r}, not the gold answer {question.answer!r}")
    unused = [e for e in certificate.edges if e not in used]
    if unused:
        problems.append(f"edges not used by the proof: {unused}")
    return problems


def _follow(side: Description, certificate: Certificate, graph: KnowledgeGraph, used: set[str], problems: list[str]) -> str | None:
    """The entity the side describes, reached through the certificate's edges; None (with a problem) if not."""
    anchor = side.anchor
    if anchor.occupation:
        people, total = graph.filter("person", [("occupation", "eq", anchor.occupation), ("family", "eq", anchor.text)])
        if total != 1:
            problems.append(f"{total} people are the {anchor.occupation} surnamed {anchor.text}; the anchor is not unique")
            return None
        current = people[0]
        for fact in (edge_text(current, "occupation", anchor.occupation), edge_text(current, "family", anchor.text)):
            if fact not in certificate.edges:
                problems.append(f"the constrained anchor's fact {fact!r} is not in the certificate")
                return None
            used.add(fact)
    else:
        named = graph.by_name.get(normalise_answer(anchor.text), [])
        if len(named) != 1:
            problems.append(f"the anchor {anchor.text!r} names {len(named)} entities")
            return None
        current = named[0]
    for _, relation in side.relations:
        following = _edge_object(current, relation, certificate, used)
        if following is None:
            problems.append(f"no certificate edge gives {relation} of {current}")
            return None
        current = following
    return current


def _edge_object(subject: str, field: str, certificate: Certificate, used: set[str]) -> str | None:
    for text in certificate.edges:
        parts = split_edge(text)
        if parts is not None and parts[0] == subject and parts[1] == field:
            used.add(text)
            return parts[2]
    return None


def certified_question(universe: Universe, graph: KnowledgeGraph, rng: random.Random, **knobs: object) -> tuple[Question, Certificate]:
    """A question of the universe with a verified certificate; questions that fail verification are redrawn."""
    for _ in range(MAX_DRAWS):
        question = universe.question(rng, **knobs)  # type: ignore[arg-type]
        certificate = certificate_of(question, graph)
        if not verify(question, certificate, graph):
            return question, certificate
    raise RuntimeError(f"no question with a verified certificate after {MAX_DRAWS} draws")
