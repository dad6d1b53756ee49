"""The idea critic: labels from verification, the critic's score and reward, screening under a budget, uncertainty
routing, the recipe end to end on the tiny model, and the experiment's tables."""

from __future__ import annotations

import json
import math
import random
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from environments.improve.anchors import critic_guided
from environments.improve.ideas import OracleCritic, heuristic_critic
from environments.improve.model import evaluate
from environments.registry import make
from environments.runner import run_episode
from training import RECIPES, run_recipe
from training.config import ConfigError, load_config
from training.idea_screening import CriticReward, choose, routed_rewards, screened_search, screening_changes, uncertain
from training.ideacritic import main, tables
from training.recipes import ideacritic as recipe
from training.recipes.ideacritic import (
    IdeaCriticConfig,
    ModelCritic,
    agreement_rewards,
    critic_metrics,
    critic_scores,
    label_of,
    normalised_gain,
    parse_verdict,
    verified_proposals,
    yes_probability,
)


@pytest.fixture(scope="module")
def costly() -> Any:
    return make("improve/costly", 1000)


# --- labels ----------------------------------------------------------------------------------------------------
def test_gain_is_the_share_of_the_attainable_improvement_clipped():
    assert normalised_gain(0.6, 0.2, 0.7) == pytest.approx(0.8)  # (0.6 - 0.2) / (0.7 - 0.2)
    assert normalised_gain(0.1, 0.2, 0.7) == 0.0 and normalised_gain(0.9, 0.2, 0.7) == 1.0
    assert normalised_gain(0.5, 0.4, 0.4) == 0.0  # no attainable gain: nothing to share
    assert (label_of(0.5, 0.5), label_of(0.499, 0.5), label_of(1.0, 1.0)) == (1, 0, 1)


def test_the_reference_is_labelled_yes_the_baseline_no_and_a_proposal_by_its_verified_score(costly):
    env = costly
    baseline, reference = evaluate(env.data, env.baseline, "val"), evaluate(env.data, env.reference, "val")
    middle = {"epochs": 100, "lr": 0.01}
    ref, base, mid = verified_proposals("improve/costly", 1000, [env.reference.to_json(), {"lr": 0.001}, middle], 0.5)
    assert (ref.gain, ref.label, ref.score) == (1.0, 1, reference)
    assert (base.gain, base.label, base.score) == (0.0, 0, baseline)
    score = evaluate(env.data, env.baseline.changed(middle), "val")
    assert mid.score == score and mid.gain == pytest.approx((score - baseline) / (reference - baseline))
    assert mid.label == int(mid.gain >= 0.5) and mid.config == env.baseline.changed(middle).to_json() and mid.n_features == 8


# --- the critic's score and reward -------------------------------------------------------------------------------
def test_verdicts_parse_from_the_first_word_and_agreement_is_one_or_zero():
    assert [parse_verdict(t) for t in ("yes", " Yes.", "no!", "NO because", "maybe", "", "yesno")] == [1, 1, 0, 0, None, None, None]
    assert agreement_rewards([1, 0, None, 1], [1, 1, 0, 0]).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_the_score_is_the_two_way_probability_of_yes():
    p = yes_probability(torch.tensor([math.log(0.3), math.log(0.02)]), torch.tensor([math.log(0.1), math.log(0.02)]))
    assert p.tolist() == pytest.approx([0.75, 0.5])  # 0.3 / (0.3 + 0.1); equal odds


def test_classifier_metrics_by_hand():
    m = critic_metrics([0.9, 0.4, 0.6, 0.2], [1, 1, 0, 0])
    # accuracy: 0.9 right, 0.4 wrong, 0.6 wrong, 0.2 right; AUC: 0.9>0.6, 0.9>0.2, 0.4<0.6, 0.4>0.2 -> 3/4
    assert m == pytest.approx({"accuracy": 0.5, "auc": 0.75, "brier": (0.01 + 0.36 + 0.36 + 0.04) / 4, "positive_rate": 0.5})
    assert critic_metrics([0.5, 0.5], [1, 0])["auc"] == 0.5 and critic_metrics([0.7], [1])["auc"] == 0.5  # a tie; one class


def test_critic_scores_match_each_answer_scored_alone(tiny_path):
    from training.data import collate
    from training.modeling import load_model, token_logprobs

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    prompts = ["short prompt", "a longer prompt that pads the other one in the batch"]
    batched = critic_scores(model, tokenizer, prompts)
    alone = []
    for text in prompts:
        summed = []
        for answer in ("yes", "no"):
            episode = recipe.answered(recipe.prompt_ids(tokenizer, text), recipe.answer_ids(tokenizer, answer))
            t = collate([episode], pad_id=tokenizer.pad_token_id)
            summed.append(float((token_logprobs(model, t["input_ids"], t["attention_mask"]) * t["mask"][:, 1:]).sum()))
        alone.append(1 / (1 + math.exp(summed[1] - summed[0])))
    assert batched == pytest.approx(alone, abs=1e-5)
    critic = ModelCritic(model, tokenizer, n_features=8, threshold=0.5)
    config = {"lr": 0.1, "reg": 0.0, "epochs": 100, "degree": 2, "features": list(range(8))}
    assert critic([config, config]) == [critic.cache[json.dumps(config, sort_keys=True)]] * 2 and len(critic.cache) == 1


def test_a_grpo_batch_rewards_agreement_within_each_proposals_group(tiny_path, monkeypatch):
    from training.modeling import load_model

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    yes, no = recipe.answer_ids(tokenizer, "yes"), recipe.answer_ids(tokenizer, "no")
    answers = [yes, no, yes, yes]  # proposal 0 (label 1): yes, no; proposal 1 (label 0): yes, yes
    monkeypatch.setattr(recipe, "generate", lambda *a, **k: [(ids, [0.0] * len(ids)) for ids in answers])
    proposal = recipe.Proposal("improve/linear", 0, 8, {"lr": 0.1, "reg": 0.0, "epochs": 100, "degree": 1, "features": [0]}, 0.5, 0.5, 1)
    other = recipe.Proposal(**{**proposal.__dict__, "label": 0})
    config = IdeaCriticConfig(model=str(tiny_path), tasks=["improve/linear"], group_size=2)
    trainer = SimpleNamespace(model=model, tokenizer=tokenizer, device=torch.device("cpu"))
    batch, stats = recipe.grpo_batch(trainer, [proposal, other], config)  # type: ignore[arg-type]
    # group 0 rewards (1, 0): advantages +-1/sqrt(0.5) / ... = (r - 0.5) / std, std = sqrt(0.5); group 1 (0, 0): 0
    assert batch["advantages"].tolist() == pytest.approx([0.5 / math.sqrt(0.5), -0.5 / math.sqrt(0.5), 0.0, 0.0], abs=1e-5)
    assert stats["agreement"] == 0.25 and stats["verdict_parsed"] == 1.0
    assert batch["mask"].sum(1).tolist() == [len(yes), len(no), len(yes), len(yes)]  # only the answers are trained


# --- screening --------------------------------------------------------------------------------------------------
def test_choose_takes_the_top_scores_a_seeded_draw_or_the_proposal_order():
    ids = ["c1", "c2", "c3", "c4"]
    assert choose(ids, [0.1, 0.9, 0.5, 0.9], 2, "critic", random.Random(0)) == ["c2", "c4"]  # ties: proposal order
    assert choose(ids, None, 3, "in_order", random.Random(0)) == ["c1", "c2", "c3"]
    assert choose(ids, None, 2, "random", random.Random(5)) == random.Random(5).sample(ids, 2)


def test_screening_verifies_exactly_the_budget_and_leaves_the_env_untouched(costly):
    in_order = screened_search(costly, verifications=2, order="in_order")
    assert in_order["chosen"] == ["c1", "c2"] and in_order["verifications"] == 2
    assert costly.world.verifications == 0 and costly.world.candidates == [] and costly.world.budget_left == 8.0
    # the oracle critic at one verification adopts the proposal with the best validation score
    oracle = screened_search(costly, verifications=1, order="critic", critic=OracleCritic(costly))
    configs = [costly.baseline.changed(c) for c in screening_changes(8, 1000)]
    best = max(range(len(configs)), key=lambda i: (evaluate(costly.data, configs[i], "val"), -i))
    assert oracle["chosen"] == [f"c{best + 1}"] and oracle["adopted"] == f"c{best + 1}"
    # twelve verifications verify everything: the selector no longer matters
    everything = {
        o: screened_search(costly, verifications=12, order=o, critic=heuristic_critic)["composite"]
        for o in ("critic", "random", "in_order")
    }
    assert len(set(everything.values())) == 1


def test_heuristic_screening_at_the_task_budget_reproduces_the_critic_guided_anchor(costly):
    anchor = run_episode(make("improve/costly", 1000), critic_guided(make("improve/costly", 1000), 1000))["header"]["score"]["composite"]
    assert screened_search(costly, verifications=4, order="critic", critic=heuristic_critic)["composite"] == anchor


# --- uncertainty routing ----------------------------------------------------------------------------------------
def test_only_scores_within_the_band_are_verified_and_their_reward_is_the_verified_label():
    scores, labels = [0.5, 0.62, 0.3, 0.9], [0.0, 1.0, 1.0, 1.0]
    assert uncertain(scores, threshold=0.5, band=0.15) == [True, True, False, False]
    routed = routed_rewards(scores, lambda i: labels[i], threshold=0.5, band=0.15)
    assert routed.rewards == [0.0, 1.0, 0.3, 0.9] and routed.verifications == 2
    assert routed_rewards(scores, lambda i: labels[i], threshold=0.5, band=0.0).verifications == 1  # the exact 0.5
    assert routed_rewards(scores, lambda i: labels[i], threshold=0.5, band=0.5).rewards == labels  # everything verified


def test_the_critic_reward_model_counts_the_verifications_it_pays(costly):
    reward = CriticReward(lambda configs: [0.5, 0.95][: len(configs)], threshold=0.5, band=0.1, label_threshold=0.5)
    configs = [costly.reference.to_json(), costly.baseline.to_json()]
    first = reward(costly, configs)
    assert first.rewards == [1.0, 0.95] and first.verified == [True, False] and reward.verifications == 1
    reward(costly, configs[1:] + configs[:1])  # the baseline now scored 0.5: verified, its label 0
    assert reward.verifications == 2


# --- the config and the recipe ------------------------------------------------------------------------------------
def test_the_config_refuses_bad_values_by_name():
    assert RECIPES["ideacritic"] == ("training.recipes.ideacritic", "IdeaCriticConfig")
    with pytest.raises(ConfigError, match="toolgym/lookup is not an improve task"):
        load_config(IdeaCriticConfig, {"model": "m", "tasks": ["toolgym/lookup"]})
    with pytest.raises(ConfigError, match=r"eval_seed_start=10: evaluation seeds \[10, 18\) overlap training seeds \[0, 64\)"):
        load_config(IdeaCriticConfig, {"model": "m", "eval_seed_start": 10})
    with pytest.raises(ConfigError, match="group_size=1") as raised:
        load_config(IdeaCriticConfig, {"model": "m", "group_size": 1, "label_threshold": 0.0})
    assert raised.value.fields == ["group_size", "label_threshold"]  # the shared groups' checks come first


def test_the_recipe_runs_sft_then_grpo_and_logs_held_out_figures(tiny_path, tmp_path):
    from training.modeling import load_model

    seen: list[tuple[int, str, float]] = []
    values = {
        "model": str(tiny_path),
        "output_dir": str(tmp_path),
        "tasks": ["improve/linear"],
        "train_seeds": 2,
        "proposals_per_seed": 4,
        "eval_seeds": 1,
        "max_steps": 2,
        "sft_steps": 1,
        "batch_size": 4,
        "proposals_per_step": 2,
        "group_size": 2,
        "learning_rate": 1e-3,
    }
    result = run_recipe("ideacritic", values, on_metric=lambda step, name, value: seen.append((step, name, value)))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2] and [r.get("phase_grpo") for r in rows] == [None, 0.0, 1.0]
    assert rows[0]["labels_verified"] == 12.0  # 2 seeds x 4 proposals to train on, 1 held-out seed x 4 to score
    assert "eval_auc" in rows[0] and "eval_auc" in rows[2] and "eval_auc" not in rows[1]
    assert "agreement" in rows[2] and 0.0 <= rows[2]["agreement"] <= 1.0 and "nll" in rows[1]
    assert (2, "phase_grpo", 1.0) in seen
    start, _ = load_model(str(tiny_path), trainable=False)
    trained, _ = load_model(result.final_checkpoint, trainable=False)
    assert any(not torch.equal(a, b) for a, b in zip(start.parameters(), trained.parameters(), strict=True))
    assert json.loads((tmp_path / "step-000002" / "training_config.json").read_text())["recipe"] == "ideacritic"


# --- the experiment -----------------------------------------------------------------------------------------------
def _runs(value: float, seeds: tuple[int, ...] = (0,)) -> dict[str, Any]:
    return {str(s): {"improve/costly": {"1": [value + s / 10, value + s / 10]}} for s in seeds}


def test_tables_give_each_arm_per_budget_and_the_paired_differences():
    result = {
        "settings": {
            "budgets": [1],
            "test_seeds": [100_000, 100_002],
            "eval_tasks": ["improve/costly"],
            "train_tasks": ["improve/linear"],
            "bands": [0.1],
        },
        "screening": {
            "critic": _runs(0.5, (0, 1, 2)),
            "random": _runs(0.2, (0, 1, 2)),
            "in_order": _runs(0.3),
            "heuristic": _runs(0.4),
            "base": _runs(0.1),
            "oracle": _runs(0.9),
        },
        "classifier": {
            "base": {"0": {"accuracy": 0.5, "auc": 0.5, "brier": 0.25, "positive_rate": 0.2}},
            "critic": {str(s): {"accuracy": 0.7, "auc": 0.8, "brier": 0.2, "positive_rate": 0.2} for s in (0, 1, 2)},
        },
        "routing": {str(s): {"0.1": {"verified": 0.25, "agreement": 0.75, "error": 0.2}} for s in (0, 1, 2)},
        "proposers": {
            "routed": {"0": {"verifications": 10.0, "gain": [0.5, 0.7], "parsed": [1.0, 1.0]}},
            "verified": {"0": {"verifications": 40.0, "gain": [0.6, 0.6], "parsed": [1.0, 0.0]}},
        },
    }
    text = tables(result)
    # critic per seed 0.5, 0.6, 0.7: mean 0.6, t(2 df) 4.303 x stdev 0.1 / sqrt(3) = 0.248
    assert "| critic | 0.600 ± 0.248 |" in text and "| in_order | 0.300 |" in text and "| oracle | 0.900 |" in text
    assert "| critic − random | +0.300 [+0.300, +0.300] |" in text  # the same +0.3 on every seed
    assert "| critic − in_order | +0.300 [+0.200, +0.400] |" in text  # 0.2, 0.3, 0.4 against the one in-order run
    assert "| critic | 0.700 ± 0.000 | 0.800 ± 0.000 | 0.200 ± 0.000 | 0.200 ± 0.000 |" in text
    assert "| 0.1 | 0.250 ± 0.000 | 0.750 ± 0.000 | 0.200 ± 0.000 |" in text
    assert "| critic reward, band 0.1 | 10.000 | 0.600 | 1.000 |" in text and "| every proposal verified | 40.000 | 0.600 | 0.500 |" in text
    assert "routed − verified gain, paired over training and held-out seeds: +0.000" in text


@pytest.mark.slow
def test_the_smoke_run_prints_the_tables(tmp_path, capsys):
    assert main(["--smoke", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    for row in ("| critic |", "| random |", "| in_order |", "| heuristic |", "| base |", "| oracle |", "| critic − random |"):
        assert row in text
    assert "| 0.5 | 1.000 | 1.000 | 0.000 |" in text  # band 0.5 around 0.5 verifies everything: rewards are the labels
    result = json.loads((tmp_path / "result.json").read_text())
    assert list(result["screening"]["critic"]) == ["0"] and list(result["screening"]["critic"]["0"]["improve/costly"]) == ["1", "2"]
    assert len(result["screening"]["critic"]["0"]["improve/costly"]["1"]) == 2 and (tmp_path / "critic-seed0").exists()
    assert "| critic reward, band 0.1 |" in text and "| every proposal verified |" in text
    routed, verified = result["proposers"]["routed"]["0"], result["proposers"]["verified"]["0"]
    assert len(routed["gain"]) == 2 and verified["verifications"] <= 2  # one step, one prompt, two answers: at most two verified
