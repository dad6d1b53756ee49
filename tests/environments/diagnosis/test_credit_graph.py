from __future__ import annotations

from fractions import Fraction

import pytest

from environments.diagnosis.credit_graph import StepGraph, dependency_graph, entity_kind, stationary_credit, step_credit, top_steps
from tests.environments.diagnosis.conftest import play


def agent_step(index: int, *events: tuple[str, str]) -> dict:
    return {"index": index, "source": "agent", "events": [{"op": op, "entity": entity, "field": "*"} for op, entity in events]}


def test_entity_kinds_are_singular_and_aliased() -> None:
    assert entity_kind("orders:*") == ("order", "*")
    assert entity_kind("order:17") == ("order", "17")
    assert entity_kind("clock") == ("clock", "")
    assert entity_kind("inventory:*", {"inventory": "sku"}) == ("sku", "*")


def test_an_edge_links_each_read_to_the_last_writer_only() -> None:
    steps = [
        {"index": 0, "source": "env", "events": []},
        agent_step(1, ("write", "order:1")),
        agent_step(2, ("write", "order:1"), ("write", "sku:A")),  # overwrites step 1's order
        agent_step(3, ("read", "orders:*")),  # sees step 2's order, not step 1's
        agent_step(4, ("read", "sku:A"), ("write", "sku:A")),  # reads before writing: depends on 2, not on itself
        agent_step(5, ("read", "inventory:*")),  # storebench alias: inventory shows sku stock
    ]
    graph = dependency_graph(steps, env="storebench")
    assert graph.nodes == [1, 2, 3, 4, 5]
    assert graph.edges == {(2, 3): 1, (2, 4): 1, (4, 5): 1}


def test_graph_credit_equals_the_hand_computed_stationary_distribution() -> None:
    # Edges 1->2, 1->3, 2->3 (writer -> reader). The walk goes reader -> writer with probability d = 1/2:
    #   3 -> 1 or 2 (one entity each), 2 -> 1; step 1 depends on nothing, so it always teleports (uniform 1/3).
    #   p1 = 1/6 + (p2 + p3/2)/2 + p1/6,  p2 = 1/6 + p3/4 + p1/6,  p3 = 1/6 + p1/6,  p1 + p2 + p3 = 1
    #   => p1 = 15/33, p2 = 10/33, p3 = 8/33.
    steps = [
        agent_step(1, ("write", "x:1"), ("write", "y:1")),
        agent_step(2, ("read", "x:1"), ("write", "z:1")),
        agent_step(3, ("read", "y:1"), ("read", "z:1")),
    ]
    graph = dependency_graph(steps)
    assert graph.edges == {(1, 2): 1, (1, 3): 1, (2, 3): 1}
    credit = stationary_credit(graph, damping=0.5)
    expected = {1: Fraction(15, 33), 2: Fraction(10, 33), 3: Fraction(8, 33)}
    for step, value in expected.items():
        assert credit[step] == pytest.approx(float(value), abs=1e-12)


def test_edge_weights_count_entities_and_personalization_shifts_the_teleport() -> None:
    graph = StepGraph(nodes=[1, 2, 3], edges={(1, 3): 3, (2, 3): 1})
    credit = stationary_credit(graph, damping=0.5, personalization={3: 1.0})
    # p3 = 1/2 + (p1 + p2)/2 (dangling 1 and 2 teleport to 3); p1 = (3/4)(p3/2); p2 = (1/4)(p3/2)  => p3 = 2/3
    assert credit[3] == pytest.approx(2 / 3)
    assert credit[1] == pytest.approx(3 / 8 * 2 / 3)
    assert credit[2] == pytest.approx(1 / 8 * 2 / 3)


def test_a_graph_without_edges_gives_uniform_credit_and_top_steps_break_ties_by_order() -> None:
    credit = stationary_credit(StepGraph(nodes=[1, 2, 3, 4]))
    assert credit == pytest.approx({1: 0.25, 2: 0.25, 3: 0.25, 4: 0.25})
    assert top_steps(credit, count=2) == [1, 2]
    assert top_steps({1: 0.1, 2: 0.5, 3: 0.3, 4: 0.1}, fraction=0.5) == [2, 3]
    assert stationary_credit(StepGraph(nodes=[])) == {}


def test_ledger_episode_credit_puts_the_write_that_was_read_first() -> None:
    record = play("ledger/tight", "ledger-stubborn")
    credit = step_credit(record["steps"])
    assert dependency_graph(record["steps"]).edges == {(1, 3): 1}  # submit read everything; only step 1 wrote
    assert top_steps(credit, count=1) == [1]
    assert sum(credit.values()) == pytest.approx(1.0)


def test_storebench_smart_triage_episode_has_a_real_dependency_graph() -> None:
    record = play("storebench/late-supplier", "smart-triage")
    graph = dependency_graph(record["steps"], env="storebench")
    credit = stationary_credit(graph)
    assert len(graph.nodes) == len(record["steps"]) - 1
    assert len(graph.edges) > 50
    assert all(i < j for i, j in graph.edges)
    assert sum(credit.values()) == pytest.approx(1.0)
    best = top_steps(credit, count=5)
    writers = {i for i, _ in graph.edges}
    assert set(best) <= writers  # the highest credit goes to steps whose writes were read
