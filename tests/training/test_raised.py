"""RAISED (training/recipes/raised.py): the KL is the one written down, injected text never reaches the teacher, and
both variants train end to end on the tiny model. Its pairs and measurements: tests/training/raised/."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from environments.attacks import report_of
from environments.servicedesk.injections import wrap
from tests.training.raised.common import STYLE, visible_pair
from training import run_recipe
from training.config import ConfigError
from training.raised.pairs import tokenized_pair
from training.recipes.raised import RaisedConfig, gather_teacher, pair_batch, raised_loss


def test_injected_text_never_reaches_the_teacher(tokenizer):
    pair = visible_pair()
    planted = wrap("direct", report_of(pair.injected["header"]["score"])["target"])
    batch = pair_batch([tokenized_pair(pair, tokenizer, style=STYLE, max_tokens=4096)], tokenizer.pad_token_id, with_clean=True)
    teacher_text = tokenizer.decode(batch["teacher_input_ids"][0], skip_special_tokens=True)
    student_texts = [tokenizer.decode(row, skip_special_tokens=True) for row in batch["input_ids"]]
    assert planted[:40] not in teacher_text and planted[:40] in student_texts[0] and planted[:40] not in student_texts[1]
    assert batch["teacher_row"].tolist() == [0, 0] and batch["injected_rows"].tolist() == [1.0, 0.0]


def test_gather_and_loss_match_the_kl_written_out():
    torch.manual_seed(0)
    teacher = torch.randn(1, 4, 5)  # one clean teacher row (T=4, V=5)
    student = torch.randn(2, 3, 5)  # an injected and a clean student row (T=3)
    rows, index = torch.tensor([0, 0]), torch.tensor([[2, 3, 3], [0, 1, 2]])
    aligned = gather_teacher(teacher, rows, index)
    assert torch.equal(aligned[0, 0], teacher[0, 2]) and torch.equal(aligned[1, 2], teacher[0, 2])
    batch = {
        "input_ids": torch.zeros(2, 3, dtype=torch.long),
        "mask": torch.tensor([[0.0, 1, 1], [0, 1, 0]]),
        "injected_rows": torch.tensor([1.0, 0.0]),
    }
    config = RaisedConfig(model="m", clean_coef=0.5)
    loss, metrics = raised_loss(student, aligned, batch, config)

    def kl(s, t):  # KL(softmax s ‖ softmax t)
        p = F.softmax(s, -1)
        return float((p * (F.log_softmax(s, -1) - F.log_softmax(t, -1))).sum())

    # distill_loss predicts token t+1 from position t: the mask's positions 1, 2 use logits at 0, 1
    injected = (kl(student[0, 0], teacher[0, 2]) + kl(student[0, 1], teacher[0, 3])) / 2
    clean = kl(student[1, 0], teacher[0, 0])
    assert metrics["reverse_kl_injected"] == pytest.approx(injected, rel=1e-5)
    assert metrics["reverse_kl_clean"] == pytest.approx(clean, rel=1e-5)
    assert float(loss) == pytest.approx(injected + 0.5 * clean, rel=1e-5)


def test_settings_are_validated_by_name():
    with pytest.raises(ConfigError, match=r"variant='dpo': must be raised or advsft"):
        RaisedConfig(model="m", variant="dpo")
    with pytest.raises(ConfigError, match=r"styles=\['loud'\]"):
        RaisedConfig(model="m", styles=["loud"])
    with pytest.raises(ConfigError, match=r"guidance_share=1.5"):
        RaisedConfig(model="m", guidance_share=1.5)
    with pytest.raises(ConfigError, match=r"eval_seed_start=10: held-out seeds overlap"):
        RaisedConfig(model="m", eval_seed_start=10)


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_both_variants_train_end_to_end_and_report_the_attack_figures(tiny_path, tmp_path):
    from transformers import AutoModelForCausalLM

    common = {
        "model": str(tiny_path),
        "max_steps": 2,
        "pairs_per_step": 2,
        "eval_episodes": 1,
        "eval_max_turns": 2,
        "max_new_tokens": 8,
        "learning_rate": 1e-3,
    }
    result = run_recipe("raised", {**common, "output_dir": str(tmp_path / "raised")})
    rows = _rows(tmp_path / "raised" / "metrics.jsonl")
    first, last = rows[1], rows[-1]
    assert first["reverse_kl_clean"] == pytest.approx(0.0, abs=1e-6)  # the student starts as the frozen teacher
    assert first["tokens_injected"] == first["tokens_clean"] > 0 and first["pairs"] == 2 and first["injection_visible"] == 1.0
    assert rows[0]["eval_output_drift"] == pytest.approx(0.0, abs=1e-6) and last["eval_output_drift"] > 0
    assert (last["eval_benign_episodes"], last["eval_attacked_episodes"]) == (1.0, 3.0)  # one seed: clean + three styles
    for figure in ("eval_benign_utility", "eval_utility_under_attack", "eval_attack_success_rate"):
        assert 0.0 <= last[figure] <= 1.0
    start = AutoModelForCausalLM.from_pretrained(tiny_path)
    trained = AutoModelForCausalLM.from_pretrained(result.final_checkpoint)
    assert any(not torch.equal(a, b) for a, b in zip(start.parameters(), trained.parameters(), strict=True))

    run_recipe("raised", {**common, "teacher_weights": "live", "max_steps": 1, "eval_episodes": 0, "output_dir": str(tmp_path / "live")})
    live = _rows(tmp_path / "live" / "metrics.jsonl")[0]
    assert live["reverse_kl_clean"] == pytest.approx(0.0, abs=1e-6) and live["reverse_kl_injected"] > 1e-6

    run_recipe("raised", {**common, "variant": "advsft", "eval_episodes": 0, "output_dir": str(tmp_path / "advsft")})
    sft = _rows(tmp_path / "advsft" / "metrics.jsonl")
    assert sft[0]["nll"] > 1.0 and sft[0]["tokens"] == first["tokens_injected"]  # same pairs, injected rows only


def test_the_experiment_configures_every_training_arm_validly_and_keeps_held_out_seeds_apart():
    from training import make_config
    from training.experiments.raised import EXPERIMENT

    assert [a.name for a in EXPERIMENT.arms] == ["raised", "advsft", "none"] and EXPERIMENT.method == "raised"
    for arm in EXPERIMENT.arms:
        if arm.recipe == "none":
            continue
        for overrides in ({}, EXPERIMENT.smoke, EXPERIMENT.gpu.overrides):
            config = make_config(arm.recipe, {"model": "m", **EXPERIMENT.shared, **overrides, **arm.overrides})
            assert config.variant == arm.overrides["variant"]
    shared = make_config("raised", {"model": "m", **EXPERIMENT.shared})
    train = range(shared.train_seed_start, shared.train_seed_start + shared.train_seeds)
    dev, test = (range(*EXPERIMENT.evaluation.dev_seeds), range(*EXPERIMENT.evaluation.test_seeds))
    assert not set(train) & (set(dev) | set(test)) and not set(dev) & set(test)


def test_a_resumed_run_draws_the_same_pairs_and_ends_with_the_same_weights(tiny_path, tmp_path):
    from transformers import AutoModelForCausalLM

    common = {"model": str(tiny_path), "max_steps": 2, "pairs_per_step": 1, "eval_episodes": 0, "learning_rate": 1e-3, "save_every": 1}
    straight = run_recipe("raised", {**common, "output_dir": str(tmp_path / "straight")})
    resumed = run_recipe(
        "raised", {**common, "output_dir": str(tmp_path / "resumed"), "resume_from": str(tmp_path / "straight" / "step-000001")}
    )
    a = AutoModelForCausalLM.from_pretrained(straight.final_checkpoint)
    b = AutoModelForCausalLM.from_pretrained(resumed.final_checkpoint)
    assert all(torch.allclose(x, y, atol=1e-6) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    last = [_rows(tmp_path / name / "metrics.jsonl")[-1] for name in ("straight", "resumed")]
    assert last[0]["reverse_kl_injected"] == pytest.approx(last[1]["reverse_kl_injected"], rel=1e-5)
