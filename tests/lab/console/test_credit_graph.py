"""The viewer's credit graph (lab/console/credit_graph.py): steps on levels by their multiple of the even share of
credit, edges out of the steps holding the most, on a real StoreBench episode more than one level (issue 44: "the
credit graph is flat")."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lab.console import credit_graph
from lab.console.credit_graph import credit_graph_layout, credit_level

pytestmark = pytest.mark.django_db


def test_a_step_is_lifted_by_its_multiple_of_the_even_share() -> None:
    assert [credit_level(share, 10) for share in (0.05, 0.1, 0.149, 0.15, 0.31, 0.8)] == [0, 0, 0, 1, 2, 3]
    layout = credit_graph_layout(credit={1: 0.85, 2: 0.05, 3: 0.05, 4: 0.05}, edges=[[1, 2, 1], [1, 3, 2], [2, 4, 1]])
    assert layout is not None
    nodes = {node["index"]: node for node in layout["nodes"]}
    assert (nodes[1]["level"], nodes[2]["level"]) == (2, 0) and nodes[1]["y"] < nodes[2]["y"]  # higher credit, higher up
    assert [node["x"] for node in layout["nodes"]] == sorted(node["x"] for node in layout["nodes"])  # in step order
    assert [level["count"] for level in layout["levels"]] == [3, 0, 1, 0]
    assert credit_graph_layout(credit={1: 1.0}, edges=[]) is None


def test_only_the_edges_out_of_the_steps_with_most_credit_are_drawn_heaviest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credit_graph, "HUBS", 1)
    monkeypatch.setattr(credit_graph, "MAX_EDGES", 2)
    layout = credit_graph_layout(credit={1: 0.5, 2: 0.2, 3: 0.2, 4: 0.1}, edges=[[1, 2, 1], [1, 3, 3], [1, 4, 2], [2, 3, 5]])
    assert layout is not None and [(e["source"], e["target"]) for e in layout["edges"]] == [(1, 3), (1, 4)]
    assert (layout["edge_count"], layout["drawn_edges"]) == (4, 2)


def test_a_storebench_episode_shows_steps_on_more_than_one_level_with_edges(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any]
) -> None:
    smart = store_episodes["smart"]
    html = login(role_users["viewer"]).get(f"/episodes/{smart.pk}/").content.decode()
    card = html.split('id="credit-graph"', 1)[1].split("</section>", 1)[0]
    levels = {int(level) for level in re.findall(r'class="credit-node lvl-(\d)"', card)}
    assert len(levels) >= 3, levels  # not one flat row: the smart anchor's reads pile credit on a few steps
    assert len({y for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', card)}) == len(levels)
    assert 0 < card.count('class="credit-edge"') <= credit_graph.MAX_EDGES
    counts = [int(c) for c in re.findall(r'data-count="(\d+)"', card)]
    assert (
        "under 1.5×" in card and sum(counts) == card.count('class="credit-node') and counts[0] > counts[-1]
    )  # most steps hold about their share
