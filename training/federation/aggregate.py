"""The aggregator: FedAvg of LoRA adapters, merging with deduplication of skills, merging of statistics (pure).

    averaged = fedavg([state_a, state_b], weights=[120, 40])    # {name: tensor}, weighted by training examples
    skills = skills_merge([["Call lookup ..."], ["call  lookup ..."]])   # one copy of each normalised text
    stats = stats_merge([{"episodes": 10, "passed": 7}, {"episodes": 5, "passed": 5}])

FedAvg here averages the LoRA A and B matrices separately, as FedIT does: the mean of products B_i A_i is not the
product of the means, so the averaged adapter is an approximation of averaging the participants' weight updates
(exact when one participant holds all the weight, or when the A matrices agree).

Before averaging, `updates_screen` refuses an update holding NaN or infinite values and clips (scales down, keeping
its direction) one whose L2 norm passes the round's bound: the norm clipping of DP-FedAvg (McMahan et al., 2018)
and the norm-bounding defence against boosted (model-replacement) updates (Sun et al., 2019, "Can you really
backdoor federated learning?"). The bound is the configured one, else a multiple of the median norm of the round's
finite updates, so one participant cannot outweigh the rest by scaling its update up.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

import torch


def fedavg(states: Sequence[Mapping[str, torch.Tensor]], weights: Sequence[float]) -> dict[str, torch.Tensor]:
    """sum_i w_i x state_i / sum_i w_i per tensor. Every state has the same names and shapes (lora_A: (r, d_in),
    lora_B: (d_out, r)); weights are the participants' training examples (non-negative, not all zero)."""
    assert states, "fedavg needs at least one participant's adapter"
    assert len(states) == len(weights), f"{len(states)} adapters but {len(weights)} weights"
    assert all(w >= 0 for w in weights) and sum(weights) > 0, f"weights must be non-negative and not all zero: {list(weights)}"
    names = sorted(states[0])
    for i, state in enumerate(states[1:], start=1):
        assert sorted(state) == names, f"participant {i}'s adapter names differ: {sorted(set(state) ^ set(names))}"
        for name in names:
            assert state[name].shape == states[0][name].shape, f"{name}: shape {tuple(state[name].shape)} vs {tuple(states[0][name].shape)}"
    total = float(sum(weights))
    out: dict[str, torch.Tensor] = {}
    for name in names:
        stacked = torch.stack([s[name].detach().to(torch.float32) for s in states])  # (P, *shape)
        w = torch.tensor([float(x) / total for x in weights], dtype=torch.float32).view(-1, *[1] * (stacked.dim() - 1))  # (P, 1, ...)
        out[name] = (stacked * w).sum(dim=0).to(states[0][name].dtype)  # (*shape)
    return out


def update_norm(state: Mapping[str, torch.Tensor]) -> float:
    """The L2 norm of an adapter's tensors taken together (a LoRA adapter is the update to the shared model)."""
    return float(torch.sqrt(sum((t.detach().to(torch.float64) ** 2).sum() for t in state.values())))


def updates_screen(
    updates: Sequence[tuple[Mapping[str, torch.Tensor], int]], *, max_norm: float, norm_factor: float
) -> tuple[list[tuple[dict[str, torch.Tensor], int]], dict[str, float]]:
    """(state, weight) pairs fit to average, and what was done: non-finite updates refused, norms above the bound
    clipped to it. The bound is `max_norm` when positive, else `norm_factor` x the median norm of the finite updates."""
    finite = [(dict(state), weight) for state, weight in updates if all(bool(torch.isfinite(t).all()) for t in state.values())]
    norms = [update_norm(state) for state, _ in finite]
    median = sorted(norms)[(len(norms) - 1) // 2] if norms else 0.0
    bound = max_norm if max_norm > 0 else norm_factor * median
    kept, clipped = [], 0
    for (state, weight), norm in zip(finite, norms, strict=True):
        if bound > 0 and norm > bound:
            clipped += 1
            state = {name: (t.to(torch.float32) * (bound / norm)).to(t.dtype) for name, t in state.items()}
        kept.append((state, weight))
    return kept, {"refused_non_finite": float(len(updates) - len(finite)), "clipped": float(clipped), "bound": float(bound)}


_SPACE = re.compile(r"\s+")


def normalise_skill(text: str) -> str:
    """The dedup key of a skill: NFKC, lower case, whitespace collapsed, trailing punctuation dropped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower().rstrip(".;:! ")


def skills_merge(lists: Sequence[Sequence[str]]) -> list[str]:
    """Every participant's skills in order (participant by participant), keeping the first of normalised duplicates."""
    seen: set[str] = set()
    merged: list[str] = []
    for skills in lists:
        for skill in skills:
            key = normalise_skill(skill)
            if key and key not in seen:
                seen.add(key)
                merged.append(skill.strip())
    return merged


def stats_merge(stats: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Counts add up; a `*_mean` value is averaged weighted by each participant's `episodes` (1 when absent)."""
    merged: dict[str, float] = {}
    weight_total = sum(float(s.get("episodes", 1.0)) for s in stats) or 1.0
    for s in stats:
        weight = float(s.get("episodes", 1.0))
        for name, value in s.items():
            add = float(value) * weight / weight_total if name.endswith("_mean") else float(value)
            merged[name] = merged.get(name, 0.0) + add
    return merged
