"""Certificates prove their answers, and the verifier refuses anything that is not a proof."""

from __future__ import annotations

import dataclasses

from environments.graphcert.certificate import Certificate, verify
from environments.graphcert.graph import split_edge
from tests.environments.graphcert.conftest import episode


def test_every_question_carries_a_certificate_that_verifies_and_shapes_vary():
    kinds, constrained = set(), 0
    for seed in range(40):
        env = episode(seed)
        assert verify(env.question, env.certificate, env.graph) == []
        assert all(env.graph.holds(e) for e in env.certificate.edges)
        kinds.add(env.question.kind)
        constrained += env.question.constrained
    assert kinds == {"chain", "comparison"} and constrained > 0


def test_a_chain_certificate_is_the_gold_chain_ending_at_the_answer():
    env = next(e for e in map(episode, range(40)) if e.question.kind == "chain" and not e.question.constrained and e.question.hops == 2)
    (first, second) = env.certificate.edges
    subject, relation, middle = split_edge(first) or ("", "", "")
    assert split_edge(second)[0] == middle  # the first edge leads to the second's subject
    last = split_edge(second)[2]
    gold = env.graph.entities[last].name if last in env.graph.entities else last
    assert gold == env.question.answer
    assert env.certificate.nodes[:2] == (subject, middle)


def test_a_constrained_certificate_states_the_occupation_and_surname_that_single_the_anchor_out():
    env = next(e for e in map(episode, range(60)) if e.question.constrained)
    anchor = env.graph.entities[env.question.chain[0].entity]
    assert env.certificate.edges[:2] == (
        f"{anchor.id} occupation {anchor.attrs['occupation']}",
        f"{anchor.id} family {anchor.attrs['family']}",
    )


def test_the_verifier_refuses_a_false_edge_a_padded_edge_and_a_missing_edge():
    env = next(e for e in map(episode, range(40)) if e.question.kind == "chain" and e.question.hops >= 2 and not e.question.constrained)
    cert, graph = env.certificate, env.graph
    subject, relation, obj = split_edge(cert.edges[0]) or ("", "", "")
    other = next(i for i in graph.entities if i.split(":")[0] == obj.split(":")[0] and i != obj)
    false = dataclasses.replace(cert, edges=(f"{subject} {relation} {other}", *cert.edges[1:]))
    assert any("does not hold" in p for p in verify(env.question, false, graph))
    extra = next(f for f in graph.facts(subject))
    padded = dataclasses.replace(cert, edges=(*cert.edges, extra))
    assert verify(env.question, padded, graph) == [f"edges not used by the proof: [{extra!r}]"]
    missing = Certificate(cert.edges[1:], cert.nodes)
    assert verify(env.question, missing, graph) != []
