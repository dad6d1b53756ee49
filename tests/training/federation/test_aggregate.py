from __future__ import annotations

import pytest
import torch

from training.federation.aggregate import fedavg, normalise_skill, skills_merge, stats_merge, update_norm, updates_screen


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


def _update(scale: float) -> dict[str, torch.Tensor]:
    return {"lora_A": torch.full((1, 2), scale), "lora_B": torch.full((2, 1), scale)}


def test_non_finite_updates_are_refused_and_an_outlier_norm_is_clipped_to_the_bound():
    honest = [(_update(1.0), 10), (_update(1.1), 10), (_update(0.9), 10)]
    nan, inf = _update(1.0), _update(1.0)
    nan["lora_A"][0, 0], inf["lora_B"][1, 0] = float("nan"), float("inf")
    kept, report = updates_screen([*honest, (nan, 10), (inf, 10), (_update(1000.0), 10)], max_norm=0.0, norm_factor=3.0)
    assert report["refused_non_finite"] == 2 and report["clipped"] == 1
    assert report["bound"] == pytest.approx(3.0 * 2.0)  # 3 x the median norm (four entries of 1.0: norm 2)
    assert len(kept) == 4 and all(torch.isfinite(t).all() for state, _ in kept for t in state.values())
    clipped = kept[-1][0]
    assert update_norm(clipped) == pytest.approx(report["bound"])  # scaled down to the bound, direction kept
    assert torch.equal(kept[0][0]["lora_A"], honest[0][0]["lora_A"])  # updates within the bound are untouched
    averaged = fedavg([s for s, _ in kept], [w for _, w in kept])
    assert float(averaged["lora_A"].abs().max()) < 2.0  # without clipping the outlier would pull the mean to about 250


def test_a_configured_absolute_bound_wins_and_nothing_finite_means_nothing_kept():
    kept, report = updates_screen([(_update(1.0), 1), (_update(5.0), 1)], max_norm=4.0, norm_factor=3.0)
    assert report["bound"] == 4.0 and report["clipped"] == 1 and update_norm(kept[1][0]) == pytest.approx(4.0)
    nan = _update(float("nan"))
    assert updates_screen([(nan, 1)], max_norm=0.0, norm_factor=3.0)[0] == []
