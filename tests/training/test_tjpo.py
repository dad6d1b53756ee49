"""TJPO: the diversity term in GRPO's advantage, the entropy bonus, and the experiment's sampled measures."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.training.chain_records import alice_chain, bob_shortcut, mallory_babble
from training import ConfigError, make_config, run_recipe
from training.credit import group_advantages
from training.data import PromptStyle
from training.experiments.tjpo import sample_measures
from training.losses import entropy_bonus
from training.recipes.grpo import GRPOConfig, grpo_advantages, with_entropy

# d(alice, bob) = 1/2, d(alice, mallory) = 3/4, d(bob, mallory) = 11/12 (tests/training/test_descriptors.py)
GROUP = [alice_chain(), bob_shortcut(), mallory_babble(), mallory_babble()]
REWARDS = torch.tensor([1.0, 1.0, 0.0, 0.0])


def _config(**values) -> GRPOConfig:
    return GRPOConfig(model="unused", group_size=4, **values)


# --- the advantage term --------------------------------------------------------------------------------------
def test_coef_zero_gives_exactly_the_group_advantages():
    advantages, metrics = grpo_advantages(GROUP, REWARDS, _config())
    assert torch.equal(advantages, group_advantages(REWARDS, [0, 0, 0, 0]))
    assert metrics["diversity_bonus_mean"] == 0.0
    assert metrics["descriptor_diversity"] == pytest.approx((0.5 + 0.75 + 0.75 + 11 / 12 + 11 / 12 + 0) / 6)


def test_passed_rollouts_gain_coef_times_their_distance_and_failed_ones_nothing():
    advantages, metrics = grpo_advantages(GROUP, REWARDS, _config(diversity_coef=0.5, diversity_representation="descriptors"))
    base = 1 / (2 * math.sqrt(1 / 3) + 2e-6)  # (1 − 0.5) / (sample std + eps)
    alice, bob = (0.5 + 0.75 + 0.75) / 3, (0.5 + 11 / 12 + 11 / 12) / 3
    assert advantages.tolist() == pytest.approx([base + 0.5 * alice, base + 0.5 * bob, -base, -base], rel=1e-5)
    assert advantages[1] > advantages[0]  # bob's path differs more from the group: the larger bonus
    assert metrics["diversity_bonus_mean"] == pytest.approx(0.5 * (alice + bob) / 4)


def test_an_all_pass_group_still_gets_a_signal_and_a_failed_copy_of_a_success_gets_none():
    records = [alice_chain(), bob_shortcut(), alice_chain(passed=False), alice_chain()]
    advantages, _ = grpo_advantages(
        records, torch.tensor([1.0, 1.0, 1.0, 1.0]), _config(diversity_coef=1.0, diversity_representation="descriptors")
    )
    # equal rewards: the normalised advantages are 0, so only the bonus remains; the record that did not pass gets 0
    assert advantages.tolist() == pytest.approx([0.5 / 3, 1.5 / 3, 0.0, 0.5 / 3])


def test_the_policy_representation_rewards_distance_between_the_policys_own_embeddings():
    """TJPO's learned representation: the bonus is the mean cosine distance, (1 − cos) / 2, between the embeddings of a
    group's members; two rollouts the policy embeds alike are at distance 0 whatever their descriptors."""
    same, other = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    embeddings = [same, same.clone(), other, -same]
    advantages, metrics = grpo_advantages(GROUP, REWARDS, _config(diversity_coef=1.0), embeddings)
    base = group_advantages(REWARDS, [0, 0, 0, 0])
    # alice: 0 to bob, 1/2 to the orthogonal one, 1 to the opposite; bob the same; failed rollouts get nothing
    assert (advantages - base).tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0])
    assert metrics["behaviour_diversity"] == pytest.approx((0 + 0.5 + 1 + 0.5 + 1 + 0.5) / 6)
    with pytest.raises(AssertionError, match="one embedding per record"):
        grpo_advantages(GROUP, REWARDS, _config(diversity_coef=1.0))
    with pytest.raises(ConfigError, match="diversity_representation='fixed'"):
        make_config("grpo", {"model": "m", "diversity_representation": "fixed"})


def test_policy_embeddings_average_the_policys_hidden_states_over_each_records_agent_tokens():
    from training.modeling import load_model
    from training.onpolicy import tokenized
    from training.recipes.grpo import policy_embeddings
    from training.tiny import tiny_model_path

    model, tokenizer = load_model(str(tiny_model_path(0)), trainable=False)
    trainer = SimpleNamespace(model=model, tokenizer=tokenizer, device=torch.device("cpu"))
    records = [alice_chain(), alice_chain(), mallory_babble()]
    vectors = policy_embeddings(trainer, tokenized(records, tokenizer), len(records), grad_accum=2)
    assert [v.shape for v in vectors] == [torch.Size([model.config.hidden_size])] * 3
    assert torch.allclose(vectors[0], vectors[1], atol=1e-5)  # the same behaviour, batched apart: the same embedding
    assert not torch.allclose(vectors[0], vectors[2], atol=1e-3)


def test_negative_coefficients_are_rejected_by_name():
    with pytest.raises(ConfigError, match="diversity_coef=-0.1"):
        make_config("grpo", {"model": "m", "diversity_coef": -0.1})
    with pytest.raises(ConfigError, match="entropy_coef=-1"):
        make_config("grpo", {"model": "m", "entropy_coef": -1})


# --- the entropy bonus ---------------------------------------------------------------------------------------
def test_entropy_bonus_values_on_a_tiny_logits_tensor():
    logits = torch.tensor([[[0.0, 0.0], [0.0, math.log(3.0)]]])  # p = (1/2, 1/2) then (1/4, 3/4)
    h0, h1 = math.log(2), math.log(4) - 0.75 * math.log(3)
    loss, metrics = entropy_bonus(logits, torch.tensor([[1.0, 1.0]]))
    assert float(loss) == pytest.approx(-(h0 + h1) / 2) and metrics["entropy"] == pytest.approx((h0 + h1) / 2)
    assert float(entropy_bonus(logits, torch.tensor([[1.0, 0.0]]))[0]) == pytest.approx(-h0)
    chunked, _ = entropy_bonus(logits.requires_grad_(), torch.tensor([[1.0, 1.0]]), chunk_size=1)
    assert float(chunked.detach()) == pytest.approx(float(loss))
    chunked.backward()
    # d(−H)/dz at uniform p is 0; at p = (1/4, 3/4): dH/dz_i = −p_i (log p_i + H), halved by the token mean
    expected = [-(-p * (math.log(p) + h1)) / 2 for p in (0.25, 0.75)]
    assert logits.grad[0, 0].tolist() == pytest.approx([0.0, 0.0], abs=1e-7)
    assert logits.grad[0, 1].tolist() == pytest.approx(expected)


def test_with_entropy_leaves_the_loss_alone_at_zero_and_subtracts_coef_times_entropy_otherwise():
    logits = torch.tensor([[[0.0, 0.0]]], requires_grad=True)
    mask, loss = torch.ones(1, 1), torch.tensor(2.0, requires_grad=True)
    same, metrics = with_entropy(loss, {"loss": 2.0}, logits, mask, _config())
    assert same is loss and metrics == {"loss": 2.0, "entropy": pytest.approx(math.log(2))}
    bonus, metrics = with_entropy(loss, {"loss": 2.0}, logits, mask, _config(entropy_coef=0.1))
    assert float(bonus.detach()) == pytest.approx(2.0 - 0.1 * math.log(2)) and metrics["loss"] == pytest.approx(float(bonus.detach()))


# --- the experiment's measures -------------------------------------------------------------------------------
def test_sample_measures_give_pass_at_k_and_diversities_per_seed(monkeypatch):
    import training.sampling

    played = {101: GROUP, 102: [mallory_babble()] * 4}  # seed 101: 2 of 4 pass; seed 102: none

    def fake_rollouts(model, tokenizer, jobs, **kwargs):
        assert kwargs["temperature"] == 1.0 and [s for _, s in jobs] == [101] * 4 + [102] * 4
        return [r for seed in (101, 102) for r in played[seed]]

    monkeypatch.setattr(training.sampling, "rollout_episodes", fake_rollouts)
    config = SimpleNamespace(task="toolgym/chain", max_turns=4, max_new_tokens=8, prompt_style=PromptStyle(), max_prompt_tokens=512)
    measures = sample_measures(None, None, config, [101, 102])
    assert measures == pytest.approx(
        {
            "pass@1": (0.5 + 0.0) / 2,
            "pass@4": (1.0 + 0.0) / 2,
            "sample_diversity": ((0.5 + 0.75 + 0.75 + 11 / 12 + 11 / 12) / 6 + 0.0) / 2,
            "success_diversity": 0.5,  # alice vs bob, on the only seed with two passes
        }
    )


# --- end to end ----------------------------------------------------------------------------------------------
def _rows(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_grpo_logs_the_tjpo_metrics_and_the_entropy_bonus_alone_moves_the_weights(tiny_path, tmp_path):
    from transformers import AutoModelForCausalLM

    common = {
        "model": str(tiny_path),
        "task": "toolgym/chain",
        "tasks_per_step": 1,
        "group_size": 2,
        "max_turns": 2,
        "max_new_tokens": 8,
        "eval_episodes": 1,
        "eval_every": 0,
        "learning_rate": 1e-3,
        "max_steps": 1,
    }
    start = AutoModelForCausalLM.from_pretrained(str(tiny_path)).state_dict()["model.norm.weight"]
    plain = run_recipe("grpo", {**common, "diversity_coef": 0.5, "output_dir": str(tmp_path / "tjpo")})
    row = _rows(tmp_path / "tjpo" / "metrics.jsonl")[1]
    assert row["pass_rate"] == 0.0 and row["diversity_bonus_mean"] == 0.0  # the random model never passes: no bonus
    assert 0.0 <= row["descriptor_diversity"] <= 1.0 and row["entropy"] > 0
    assert torch.equal(AutoModelForCausalLM.from_pretrained(plain.final_checkpoint).state_dict()["model.norm.weight"], start)
    bonus = run_recipe("grpo", {**common, "entropy_coef": 0.1, "output_dir": str(tmp_path / "entropy")})
    assert not torch.equal(AutoModelForCausalLM.from_pretrained(bonus.final_checkpoint).state_dict()["model.norm.weight"], start)
