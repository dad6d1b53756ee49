"""The viewer's credit graph (issue 44, "the credit graph is flat"): each agent step a node, placed along the episode
by its position and lifted to a *level* by how many times the even share (1/n) of credit it holds, with the edges
from the steps that hold the most credit to the later steps that read what they wrote.

Bars alone were flat: PageRank over ~500 StoreBench steps gives most steps about 1/n and a handful 5-15 times that,
so bars scaled to the largest were all a few pixels wide. Levels on a log scale of the even share show both.

    layout = credit_graph_layout(credit={1: 0.2, ...}, edges=[[1, 4, 2], ...])   # None below two nodes
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

from lab.diagnoses.analysis import episode_step_credit
from lab.diagnoses.selectors import CREDIT_CACHE_SECONDS
from lab.trajectories.models import Episode, EpisodeStatus

# (lowest multiple of the even share, label), lowest level first
LEVELS = ((0.0, "under 1.5×"), (1.5, "1.5–3×"), (3.0, "3–8×"), (8.0, "8× and more"))
HUBS = 12  # the steps with the most credit whose out-edges are drawn
MAX_EDGES = 200
WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, ROW = 960, 190, 150, 12, 44


def credit_level(share: float, n: int) -> int:
    ratio = share * n
    return max(i for i, (low, _) in enumerate(LEVELS) if ratio >= low)


def credit_graph_layout(*, credit: dict[int, float], edges: list[list[int]]) -> dict[str, Any] | None:
    """Nodes {index, credit, level, x, y, r} and edges {source, target, weight, x1, y1, x2, y2} in SVG coordinates;
    `levels` the rows with their labels and counts. Edges: those out of the HUBS steps with the most credit, at most
    MAX_EDGES, heaviest first."""
    if len(credit) < 2:
        return None
    order = sorted(credit)
    n = len(order)
    span = WIDTH - PAD_LEFT - PAD_RIGHT
    nodes: dict[int, dict[str, Any]] = {}
    for position, index in enumerate(order):
        level = credit_level(credit[index], n)
        nodes[index] = {
            "index": index,
            "credit": credit[index],
            "level": level,
            "x": round(PAD_LEFT + span * position / (n - 1), 1),
            "y": HEIGHT - 20 - level * ROW,
            "r": 2 + level,
        }
    hubs = set(sorted(credit, key=lambda i: (-credit[i], i))[:HUBS])
    drawn = sorted((e for e in edges if e[0] in hubs and e[0] in nodes and e[1] in nodes), key=lambda e: (-credit[e[0]], -e[2], e[1]))
    lines = [
        {"source": i, "target": j, "weight": w, "x1": nodes[i]["x"], "y1": nodes[i]["y"], "x2": nodes[j]["x"], "y2": nodes[j]["y"]}
        for i, j, w in drawn[:MAX_EDGES]
    ]
    counts = [0] * len(LEVELS)
    for node in nodes.values():
        counts[node["level"]] += 1
    levels = [{"level": k, "label": label, "count": counts[k], "y": HEIGHT - 20 - k * ROW} for k, (_, label) in enumerate(LEVELS)]
    return {
        "nodes": list(nodes.values()),
        "edges": lines,
        "levels": levels,
        "width": WIDTH,
        "height": HEIGHT,
        "edge_count": len(edges),
        "drawn_edges": len(lines),
        "hubs": len(hubs),
    }


def episode_credit_graph(*, episode: Episode) -> dict[str, Any] | None:
    """The layout for a finished episode, cached as its credit is (its steps never change after it ends)."""
    if episode.status == EpisodeStatus.RUNNING or not episode.step_count:
        return None
    key = f"console:credit-graph:{episode.pk}:{episode.step_count}:{episode.content_hash or episode.created_at.timestamp()}"
    layout = cache.get(key)
    if layout is None:
        data = episode_step_credit(episode=episode)
        layout = credit_graph_layout(credit={row["index"]: row["credit"] for row in data["credit"]}, edges=data["edges"]) or {}
        cache.set(key, layout, timeout=CREDIT_CACHE_SECONDS)
    return layout or None
