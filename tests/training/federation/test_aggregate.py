from __future__ import annotations

import pytest
import torch

from training.federation.aggregate import fedavg, normalise_skill, skills_merge, stats_merge


def test_fedavg_weights_each_adapter_by_its_examples_exactly():
    a = {"lora_A": torch.tensor([[1.0, 2.0]]), "lora_B": torch.tensor([[4.0], [0.0]])}  # (r=1, d_in=2), (d_out=2, r=1)
    b = {"lora_A": torch.tensor([[5.0, 6.0]]), "lora_B": torch.tensor([[0.0], [8.0]])}
    out = fedavg([a, b], weights=[3, 1])
    assert torch.equal(out["lora_A"], torch.tensor([[2.0, 3.0]]))  # (3*1 + 5)/4, (3*2 + 6)/4
    assert torch.equal(out["lora_B"], torch.tensor([[3.0], [2.0]]))
    assert torch.equal(fedavg([a, b], weights=[1, 0])["lora_A"], a["lora_A"])  # all the weight on one: that adapter
    assert fedavg([a], weights=[7])["lora_B"].shape == (2, 1)


def test_fedavg_refuses_mismatched_adapters_and_weights():
    a = {"x": torch.zeros(2, 3)}
    with pytest.raises(AssertionError, match="shape"):
        fedavg([a, {"x": torch.zeros(3, 2)}], [1, 1])
    with pytest.raises(AssertionError, match="names differ"):
        fedavg([a, {"y": torch.zeros(2, 3)}], [1, 1])
    with pytest.raises(AssertionError, match="not all zero"):
        fedavg([a, a], [0, 0])
    with pytest.raises(AssertionError, match="2 adapters but 1 weights"):
        fedavg([a, a], [1])


def test_skills_merge_keeps_the_first_of_normalised_duplicates_in_order():
    merged = skills_merge([["Call lookup, then answer.", "Say the word."], ["call  LOOKUP, then answer", "Ask owner first."], []])
    assert merged == ["Call lookup, then answer.", "Say the word.", "Ask owner first."]
    assert normalise_skill("  Ｃall\tlookup! ") == "call lookup"  # NFKC folds the full-width letter


def test_stats_merge_adds_counts_and_weights_means_by_episodes():
    merged = stats_merge([{"episodes": 10, "passed": 7, "composite_mean": 0.7}, {"episodes": 30, "passed": 30, "composite_mean": 1.0}])
    assert merged["episodes"] == 40 and merged["passed"] == 37
    assert merged["composite_mean"] == pytest.approx((10 * 0.7 + 30 * 1.0) / 40)
