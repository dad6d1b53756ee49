"""Credit assignment and data selection: group-relative advantages, supervision horizon, selective refinement.

    adv = group_advantages(torch.tensor([1., 0., 1., 5.]), [0, 0, 0, 1])   # the lone member of group 1 gets 0
    short = [horizon(e, 256) for e in episodes]                               # first 256 tokens of each
    short = [horizon(e, turns_end(e, 2)) for e in episodes]                   # up to the end of each one's 2nd agent turn
    keep = select_for_refinement(scores, rule="unlikely", fraction=0.25)      # the continuations it gets most wrong

Selective long-horizon refinement, in three moves: warm-start on short prefixes (`horizon`), score each
episode's continuation beyond the prefix under the warm-started model (`continuation_logprob`), then refine on
the full episodes the rule picks (`select_for_refinement`): the most likely continuations, the least likely (those
the short model gets most wrong), or a seeded random draw of the same size (the control). The sft recipe wires it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from training.data import TokenizedEpisode, collate


def group_advantages(rewards: torch.Tensor, group_ids: Sequence[Any] | torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(r − group mean) / (group std + eps) with the sample (n−1) standard deviation; groups of one give 0."""
    rewards = rewards.float()
    keys = group_ids.tolist() if isinstance(group_ids, torch.Tensor) else list(group_ids)
    assert len(keys) == rewards.numel(), f"{len(keys)} group ids for {rewards.numel()} rewards"
    advantages = torch.zeros_like(rewards)
    for key in dict.fromkeys(keys):
        members = torch.tensor([i for i, k in enumerate(keys) if k == key])
        if len(members) < 2:
            continue
        group = rewards[members]
        advantages[members] = (group - group.mean()) / (group.std() + eps)
    return advantages


def horizon(episode: TokenizedEpisode, max_tokens: int) -> TokenizedEpisode:
    """The supervision horizon: keep the first `max_tokens` tokens of the trajectory (masks cut alike)."""
    assert max_tokens > 0, f"horizon must be positive, got {max_tokens}"
    return episode.truncate(max_tokens)


def turns_end(episode: TokenizedEpisode, turns: int) -> int:
    """Tokens up to the end of the episode's `turns`-th trained agent turn (a horizon in turns, tokenizer-free);
    the whole episode when it has no more turns than that."""
    assert turns > 0, f"turns must be positive, got {turns}"
    steps = list(dict.fromkeys(step for step, _, _ in episode.agent_spans))
    if len(steps) <= turns:
        return len(episode)
    return max(end for step, _, end in episode.agent_spans if step in steps[:turns])


@torch.no_grad()
def continuation_logprob(
    model: Any, episodes: Sequence[TokenizedEpisode], prefix_tokens: int | Sequence[int], *, pad_id: int, batch_size: int = 4
) -> list[float]:
    """Mean log-likelihood per trained token of each episode's agent tokens beyond its prefix (`prefix_tokens`: one
    length for all, or one per episode).

    Episodes with no trained token past the prefix score -inf (nothing to refine on).
    """
    from training.modeling import token_logprobs

    prefixes = [prefix_tokens] * len(episodes) if isinstance(prefix_tokens, int) else list(prefix_tokens)
    assert len(prefixes) == len(episodes), f"{len(prefixes)} prefix lengths for {len(episodes)} episodes"
    scores: list[float] = []
    for start in range(0, len(episodes), batch_size):
        chunk = list(episodes[start : start + batch_size])
        batch = collate(chunk, pad_id=pad_id)
        device = next(model.parameters()).device
        logp = token_logprobs(model, batch["input_ids"].to(device), batch["attention_mask"].to(device)).float().cpu()  # (B, T-1)
        mask = batch["mask"][:, 1:].clone()
        for row, prefix in enumerate(prefixes[start : start + batch_size]):
            mask[row, : max(prefix - 1, 0)] = 0.0  # position t-1 predicts token t; drop tokens inside the prefix
        total, count = (logp * mask).sum(-1), mask.sum(-1)
        scores.extend([float(t / c) if c > 0 else float("-inf") for t, c in zip(total, count, strict=True)])
    return scores


def select_by_likelihood(scores: Sequence[float], *, fraction: float | None = None, count: int | None = None) -> list[int]:
    """Indices of the highest-scoring items: the top `count`, or the top `fraction` (at least one). Ties keep order."""
    assert (fraction is None) != (count is None), "give exactly one of fraction or count"
    if fraction is not None:
        assert 0.0 < fraction <= 1.0, f"fraction must be in (0, 1], got {fraction}"
        count = max(1, round(fraction * len(scores)))
    assert count is not None and count >= 0
    finite = [i for i, s in enumerate(scores) if s != float("-inf")]
    ranked = sorted(finite, key=lambda i: -scores[i])
    return sorted(ranked[:count])


REFINE_RULES = ("likely", "unlikely", "random")


def select_for_refinement(
    scores: Sequence[float], *, rule: str, fraction: float | None = None, count: int | None = None, seed: int = 0
) -> list[int]:
    """Indices (sorted) of the episodes to refine on, among those with a continuation (a finite score): the top
    `count`, or the top `fraction` of all episodes (at least one), by `rule`: likely = the highest mean
    log-likelihood of the continuation, unlikely = the lowest (the later turns the short model gets most wrong),
    random = a uniform draw seeded by `seed` (the control, at the same count). Ties keep order."""
    assert rule in REFINE_RULES, f"rule must be one of {REFINE_RULES}, got {rule!r}"
    if rule == "likely":
        return select_by_likelihood(scores, fraction=fraction, count=count)
    if rule == "unlikely":  # negate the finite scores; -inf (nothing past the prefix) stays unselectable
        return select_by_likelihood([s if s == float("-inf") else -s for s in scores], fraction=fraction, count=count)
    size = len(select_by_likelihood(scores, fraction=fraction, count=count))  # the same count as the other rules
    finite = [i for i, s in enumerate(scores) if s != float("-inf")]
    return sorted(random.Random(seed).sample(finite, size))
