from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from environments.analyzers import StepAnalysis, analyze_record
from training import ConfigError, make_config, run_recipe
from training.data import PromptStyle, collate
from training.losses import HiddenLogits, dense, grpo_loss
from training.modeling import forward_logits, load_model
from training.onpolicy import tokenized
from training.recipes import gated_sd
from training.recipes.gated_sd import GatedSDConfig, gate_weight, guided_prompt_ids, joint_loss, teacher_rows, teacher_targets
from training.sampling import rollout_episodes

GUIDANCE = "Zebra marker: look up the lamp."


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_path):
    model, tokenizer = load_model(str(tiny_path), device=torch.device("cpu"), trainable=False)
    return model, tokenizer


def _rollouts(model, tokenizer, style: PromptStyle = PromptStyle()):
    torch.manual_seed(0)
    return rollout_episodes(model, tokenizer, [("toolgym/lookup", 3), ("toolgym/lookup", 4)], max_turns=2, max_new_tokens=8, style=style)


def _guided(records):
    """Every step gets the marker guidance; values alternate 0 and 1 so the gate has work to do."""
    return [{i: StepAnalysis(GUIDANCE, float(k % 2)) for k, (i, _) in enumerate(analyze_record(r))} for r in records]


def test_gate_weights():
    assert [gate_weight(v, "threshold", 0.5) for v in (0.0, 0.49, 0.5, 1.0)] == [1.0, 1.0, 0.0, 0.0]
    assert [gate_weight(v, "linear", 0.5) for v in (0.0, 0.3, 1.0)] == [1.0, pytest.approx(0.7), 0.0]
    assert [gate_weight(v, "none", 0.5) for v in (0.0, 1.0)] == [1.0, 1.0]
    with pytest.raises(ValueError, match="gate must be"):
        gate_weight(0.0, "cosine", 0.5)


def test_config_errors_name_the_field(tiny_path):
    with pytest.raises(ConfigError, match="gate='cosine'"):
        make_config("gated_sd", {"model": str(tiny_path), "gate": "cosine"})
    with pytest.raises(ConfigError, match="sd_coef=-1"):
        make_config("gated_sd", {"model": str(tiny_path), "sd_coef": -1})


def _loss_batch(gate: torch.Tensor) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    return {
        "input_ids": torch.tensor([[0, 1, 2, 1], [2, 2, 0, 0]]),
        "mask": torch.tensor([[0.0, 1, 1, 1], [0, 1, 1, 0]]),
        "old_logp": torch.randn(2, 3) - 1.0,
        "advantages": torch.tensor([1.0, -1.0]),
        "teacher_logits": torch.randn(2, 3, 3),
        "teacher_logp": torch.randn(2, 3) - 1.0,
        "gate": gate,
    }


@pytest.mark.parametrize("loss", ["full", "sampled"])
def test_joint_loss_is_grpo_plus_the_gated_kl_computed_by_hand(loss):
    gate = torch.tensor([[1.0, 0.0, 0.5], [0.25, 1.0, 0.0]])
    batch = _loss_batch(gate)
    logits = torch.randn(2, 4, 3)
    config = GatedSDConfig(model="unused", sd_coef=0.3, loss=loss)
    value, metrics = joint_loss(logits, batch, config)
    logp_all = torch.log_softmax(logits[:, :-1], -1)
    logp = logp_all.gather(-1, batch["input_ids"][:, 1:].unsqueeze(-1)).squeeze(-1)
    rl, _ = grpo_loss(logp, batch["old_logp"], batch["advantages"], batch["mask"][:, 1:])
    if loss == "full":
        per_token = (logp_all.exp() * (logp_all - torch.log_softmax(batch["teacher_logits"], -1))).sum(-1)
    else:
        per_token = logp - batch["teacher_logp"]
    mask = batch["mask"][:, 1:]
    sd = (per_token * mask * gate).sum() / mask.sum()  # weights scale tokens, the mean is over every agent token
    assert float(value) == pytest.approx(float(rl + 0.3 * sd), abs=1e-5)
    assert metrics["sd_gate_mean"] == pytest.approx(float((gate * mask).sum() / mask.sum()))
    alone, _ = joint_loss(logits, batch, GatedSDConfig(model="unused", sd_coef=0.0, loss=loss))
    assert float(alone) == pytest.approx(float(rl), abs=1e-6)


def test_a_closed_gate_gives_the_sd_term_no_gradient():
    batch = _loss_batch(torch.zeros(2, 3))
    batch["advantages"] = torch.zeros(2)  # and GRPO none either
    logits = torch.randn(2, 4, 3, requires_grad=True)
    value, _ = joint_loss(logits, batch, GatedSDConfig(model="unused", sd_coef=1.0))
    value.backward()
    assert float(value.detach()) == 0.0 and torch.count_nonzero(logits.grad) == 0


@pytest.mark.parametrize("compact", [False, True])
def test_the_unguided_teacher_prompt_is_exactly_the_students_first_prompt(model_and_tokenizer, compact):
    model, tokenizer = model_and_tokenizer
    record = _rollouts(model, tokenizer, PromptStyle(compact_tools=compact, max_result_chars=200))[0]
    first = next(s["prompt_token_ids"] for s in record["steps"] if s.get("prompt_token_ids"))
    assert guided_prompt_ids(record, tokenizer, None) == first
    guided = tokenizer.decode(guided_prompt_ids(record, tokenizer, GUIDANCE, 2))
    assert "A reviewer's note on your turn 2, which you are about to take: " + GUIDANCE in guided


def test_guidance_is_in_the_teachers_context_only(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    records = _rollouts(model, tokenizer)
    analyses = _guided(records)
    config = GatedSDConfig(model="unused")
    for i, student in tokenized(records, tokenizer):
        assert GUIDANCE not in tokenizer.decode(student.input_ids)  # the student's prompts and samples never hold it
        assert all(GUIDANCE not in tokenizer.decode(s.get("prompt_token_ids") or []) for s in records[i]["steps"])
        rows = teacher_rows(0, records[i], student, analyses[i], tokenizer, config)
        assert len(rows) == len(student.agent_spans) == 2
        for row, (_, start, end) in zip(rows, student.agent_spans, strict=True):
            assert GUIDANCE in tokenizer.decode(row.input_ids)
            # after the guided prompt the teacher reads exactly the student's tokens, up to the end of the step
            assert row.input_ids[start + row.offset : end + row.offset] == student.input_ids[start:end]
            assert len(row.input_ids) == end + row.offset
        assert [r.weight for r in rows] == [1.0, 0.0]  # values 0 and 1 under the threshold gate


def test_teacher_positions_come_from_each_steps_own_guided_row(model_and_tokenizer, monkeypatch):
    model, tokenizer = model_and_tokenizer
    records = _rollouts(model, tokenizer)
    analyses = _guided(records)
    pairs = tokenized(records, tokenizer)
    batch = collate([e for _, e in pairs], pad_id=tokenizer.pad_token_id)
    config = GatedSDConfig(model="unused", gate="none")
    rows = [t for row, (i, e) in enumerate(pairs) for t in teacher_rows(row, records[i], e, analyses[i], tokenizer, config)]
    out = teacher_targets(model, rows, batch, tokenizer.pad_token_id, full=True)
    assert torch.equal(out["gate"], batch["mask"][:, 1:])  # gate=none: weight 1 exactly on the agent tokens
    row = rows[1]  # the second step of the first episode: compare with a forward of its own guided row
    alone = forward_logits(model, torch.tensor([row.input_ids]), torch.ones(1, len(row.input_ids), dtype=torch.long))[0]
    expected = alone[row.start - 1 + row.offset : row.end - 1 + row.offset]
    assert isinstance(out["teacher_logits"], HiddenLogits)  # the engine runs this model: hidden states are kept, not logits
    assert torch.allclose(dense(out["teacher_logits"])[row.row, row.start - 1 : row.end - 1], expected, atol=1e-5)
    # without guidance the teacher is the student itself: its aligned logits equal the student's, so the KL is 0
    monkeypatch.setattr(gated_sd, "guided_prompt_ids", lambda record, tok, guidance, turn=0: guided_prompt_ids(record, tok, None))
    plain = [t for row, (i, e) in enumerate(pairs) for t in teacher_rows(row, records[i], e, analyses[i], tokenizer, config)]
    assert all(r.offset == 0 for r in plain)
    same = teacher_targets(model, plain, batch, tokenizer.pad_token_id, full=False)
    student_logp = torch.log_softmax(forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1], -1)
    student_logp = student_logp.gather(-1, batch["input_ids"][:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = batch["mask"][:, 1:] > 0
    assert torch.allclose(same["teacher_logp"][mask], student_logp[mask], atol=1e-5)


def _rows(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _norm(folder: str) -> torch.Tensor:
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))["model.norm.weight"]


@pytest.mark.slow
def test_end_to_end_the_sd_term_trains_where_grpo_alone_has_no_signal(tiny_path, tmp_path):
    base = {
        "model": str(tiny_path),
        "task": "toolgym/lookup",
        "tasks_per_step": 1,
        "group_size": 2,
        "max_turns": 2,
        "max_new_tokens": 10,
        "eval_episodes": 1,
        "eval_every": 0,
        "learning_rate": 1e-3,
        "max_steps": 2,
    }
    alone = run_recipe("gated_sd", {**base, "sd_coef": 0.0, "output_dir": str(tmp_path / "grpo")})
    joint = run_recipe("gated_sd", {**base, "sd_coef": 1.0, "loss": "sampled", "output_dir": str(tmp_path / "joint")})
    start = _norm(str(tiny_path))
    # a random tiny model fails every rollout: tied rewards give GRPO zero advantages, so only the SD term moves it
    assert torch.equal(_norm(alone.final_checkpoint), start)
    assert not torch.equal(_norm(joint.final_checkpoint), start)
    for name in ("grpo", "joint"):
        row = _rows(tmp_path / name / "metrics.jsonl")[1]
        assert row["reward_std"] == 0.0 and row["step_value_mean"] == 0.0 and row["steps_gated_in"] == 1.0
        assert row["sd_gate_mean"] == 1.0 and not math.isnan(row["sd_reverse_kl"])
        assert "eval_reward_mean" in _rows(tmp_path / name / "metrics.jsonl")[-1]


def test_the_experiment_compares_joint_with_grpo_alone_at_the_same_config(tiny_path):
    from training.experiments.gated_sd import GATED_SD

    assert GATED_SD.method == "joint" and {a.name: a.overrides for a in GATED_SD.arms} == {
        "joint": {"sd_coef": 0.5},
        "grpo": {"sd_coef": 0.0},
        "none": {},  # the start checkpoint, evaluated like the others
    }
    assert [a.recipe for a in GATED_SD.arms] == ["gated_sd", "gated_sd", "none"] and GATED_SD.train_seeds == (0, 1, 2)
    dev, test = GATED_SD.evaluation.dev_seeds, GATED_SD.evaluation.test_seeds
    assert dev[1] <= test[0] and GATED_SD.shared["train_seed_start"] + GATED_SD.shared["train_seeds"] <= dev[0]
    for arm in [a for a in GATED_SD.arms if a.recipe != "none"]:
        for extra in ({}, GATED_SD.smoke, GATED_SD.gpu.overrides if GATED_SD.gpu else {}):
            make_config("gated_sd", {**GATED_SD.shared, **extra, **arm.overrides, "model": str(tiny_path)})  # raises on a bad field
