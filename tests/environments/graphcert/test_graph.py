"""The knowledge graph's queries against the world they read."""

from __future__ import annotations

from environments.graphcert.graph import MAX_RESULTS, split_edge
from tests.environments.graphcert.conftest import episode


def test_lookup_finds_by_name_and_alias_and_neighbours_state_true_edges_both_ways():
    graph = episode().graph
    person = graph.entities["person:3"]
    assert graph.lookup(person.name, None) == ["person:3"] and graph.lookup(person.aliases[0].upper(), "person") == ["person:3"]
    out, total = graph.neighbours("person:3", None, "out")
    assert [n.edge for n in out] == [f"person:3 {r} {t}" for r, t in sorted(person.rels.items())] and total == 2
    employer = person.rels["employer"]
    incoming, count = graph.neighbours(employer, "employer", "in")
    assert "person:3 employer " + employer in [n.edge for n in incoming] and len(incoming) == min(count, MAX_RESULTS)
    assert all(graph.holds(n.edge) for n in incoming)
    assert not graph.holds(f"person:3 employer {employer}x") and not graph.holds("nobody:1 employer x") and not graph.holds("two words")


def test_path_is_a_shortest_chain_of_true_edges():
    graph = episode().graph
    person = graph.entities["person:3"]
    city = graph.entities[person.rels["birthplace"]]
    assert graph.path("person:3", city.id, 4) == [f"person:3 birthplace {city.id}"]
    country = city.rels["country"]
    two = graph.path("person:3", country, 4)
    assert two is not None and len(two) <= 2 and all(graph.holds(e) for e in two)
    assert graph.path("person:3", "person:3", 1) == [] and graph.path("person:3", country, 0) is None


def test_filter_compares_text_and_numbers_and_refuses_text_to_numeric_ops():
    graph = episode().graph
    person = graph.entities["person:3"]
    where = [("occupation", "eq", str(person.attrs["occupation"]).upper()), ("family", "eq", str(person.attrs["family"]))]
    found, total = graph.filter("person", where)
    assert "person:3" in found and total == len(found)
    year = int(person.attrs["birth_year"])
    older, _ = graph.filter("person", [("birth_year", "lt", str(year))])
    assert "person:3" not in older and all(int(graph.entities[i].attrs["birth_year"]) < year for i in older)
    assert graph.filter("person", [("occupation", "lt", "5")]) == ([], 0)
    assert split_edge("city:1 form poem cycle") == ("city:1", "form", "poem cycle")
