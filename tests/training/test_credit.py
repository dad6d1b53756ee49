from __future__ import annotations

import math

import pytest
import torch

from training.credit import group_advantages, horizon, select_by_likelihood
from training.data import TokenizedEpisode


def test_group_advantages_normalise_within_each_group():
    adv = group_advantages(torch.tensor([1.0, 0.0, 2.0, 5.0, 3.0, 3.0]), ["a", "a", "a", "b", "c", "c"])
    std = 1.0  # sample std of [1, 0, 2]
    assert adv[:3].tolist() == pytest.approx([0.0, -1.0 / (std + 1e-6), 1.0 / (std + 1e-6)])
    assert adv[3].item() == 0.0  # a group of one
    assert adv[4:].tolist() == [0.0, 0.0]  # equal rewards: no signal
    two = group_advantages(torch.tensor([1.0, 0.0]), [7, 7])
    assert two.tolist() == pytest.approx([0.5 / math.sqrt(0.5), -0.5 / math.sqrt(0.5)], abs=1e-5)


def test_horizon_keeps_the_first_tokens():
    episode = TokenizedEpisode([1, 2, 3, 4], [0, 1, 1, 1], [0, 0, 0, 0], [0, 1, 1, 1], [-1, 1, 1, 1], [(1, 1, 4)], [math.nan] * 4)
    short = horizon(episode, 2)
    assert short.input_ids == [1, 2] and short.mask == [0, 1] and short.agent_spans == [(1, 1, 2)] and short.truncated


def test_select_by_likelihood_keeps_the_most_likely_continuations():
    scores = [-3.0, -0.5, float("-inf"), -1.0, -2.0]
    assert select_by_likelihood(scores, count=2) == [1, 3]
    assert select_by_likelihood(scores, fraction=0.4) == [1, 3]
    assert select_by_likelihood(scores, fraction=0.01) == [1]
    assert select_by_likelihood(scores, count=10) == [0, 1, 3, 4]  # -inf (nothing past the prefix) never selected
