"""Graph credit as training weights: per-step weights from the step dependency graph, per-token fusion with
the teacher-student divergence.

    weight_of = graph_step_weight(record, top_fraction=0.25)        # step dict -> weight; tokenize_record's step_weight
    episodes = tokenize_record(record, tokenizer, graph_credit=0.25)  # the same, as the data pipeline's option
    weights = fuse_with_divergence(batch["weights"], divergence, batch["mask"])   # (B, T), for SFT/OPD losses

Per-step credit is environments.diagnosis.credit_graph's stationary distribution (a damped walk from each step
to the steps whose writes it read). Only each trajectory's top steps by credit are trained: they get weight
credit / mean credit of the top steps (so the kept steps average 1 and the loss keeps its scale), every other
step `floor` (0 by default). A trajectory whose events give no edges carries no information to rank by, so all
its steps keep weight 1 rather than an arbitrary subset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from environments.diagnosis.credit_graph import dependency_graph, stationary_credit, top_steps
from environments.records import Record, Step


def graph_step_weights(record: Record, *, top_fraction: float = 0.25, damping: float = 0.85, floor: float = 0.0) -> dict[int, float]:
    """{agent step index: weight} for one record (see the module docstring)."""
    assert 0.0 < top_fraction <= 1.0, f"graph_credit top fraction must be in (0, 1], got {top_fraction}"
    assert 0.0 <= floor <= 1.0, f"floor must be in [0, 1], got {floor}"
    graph = dependency_graph(record["steps"], env=(record.get("header") or {}).get("env"))
    if not graph.edges:
        return {i: 1.0 for i in graph.nodes}
    credit = stationary_credit(graph, damping=damping)
    top = top_steps(credit, fraction=top_fraction)
    mean = sum(credit[i] for i in top) / len(top)
    kept = set(top)
    return {i: (credit[i] / mean if i in kept else floor) for i in graph.nodes}


def graph_step_weight(record: Record, **options: Any) -> Callable[[Step], float]:
    """The per-step weight function training.data.tokenize_record takes as `step_weight`."""
    weights = graph_step_weights(record, **options)
    return lambda step: weights.get(int(step["index"]), 1.0)


def fuse_with_divergence(weights: torch.Tensor, divergence: torch.Tensor, mask: torch.Tensor, *, eps: float = 1e-8) -> torch.Tensor:
    """Per-token weights (B, T) that follow the teacher-student divergence within the graph-credited tokens.

    fused = w · d, rescaled per sequence so that Σ m·fused = Σ m·w: the graph decides which steps count and how
    much each sequence weighs in total, the divergence decides which tokens inside them carry that weight.
    `divergence` (B, T) is clamped at 0 (a per-token KL estimate can be negative on single samples). A sequence
    whose credited tokens show no divergence keeps its graph weights.
    """
    assert weights.shape == divergence.shape == mask.shape, f"shapes differ: {weights.shape}, {divergence.shape}, {mask.shape}"
    m = mask.float()
    w = weights.float() * m
    raw = w * divergence.float().clamp(min=0.0)  # (B, T)
    total_w, total_raw = w.sum(-1, keepdim=True), raw.sum(-1, keepdim=True)  # (B, 1)
    scaled = raw * (total_w / total_raw.clamp(min=eps))
    return torch.where(total_raw > eps, scaled, w)
