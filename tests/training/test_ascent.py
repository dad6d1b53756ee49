"""ASCENT (training/recipes/ascent.py): cleaning, the frozen teacher, the KL math, and a scripted stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from environments.toolgym.anchors import ExpertPolicy
from environments.trajectory import make_step
from training import ConfigError, run_recipe
from training.data import tokenize_record
from training.modeling import LoraSpec, forward_logits, load_model
from training.onpolicy import to_device
from training.recipes import ascent
from training.recipes.ascent import AscentConfig, ascent_loss, cleaned_record, stream_seed, teacher_view, trajectory_text
from training.scripted import scripted_episode

TASK = "toolgym/chain"
INVALID_TEXT = "I am not sure what to do"


def _rollout_shaped(record: dict[str, Any], *, invalid_after: int | None = None) -> dict[str, Any]:
    """A scripted record as the sampler returns it: sampled ids on every agent turn, header metrics, and optionally
    an unparsed turn (the sampler's error result) inserted after step `invalid_after`."""
    steps = [dict(s) for s in record["steps"]]
    if invalid_after is not None:
        error = {"call_id": "invalid", "content": {"error": "no tool call found"}, "is_error": True}
        steps.insert(invalid_after + 1, make_step(index=0, source="agent", message=INVALID_TEXT, results=[error]))
    for i, step in enumerate(steps):
        step["index"] = i
        if step["source"] == "agent":  # ids the cleaning must not reuse: they were sampled with the dropped turn in the prompt
            step.update(token_ids=[7, 7, 7], prompt_token_ids=[5] * (i + 3), logprobs=[-1.0, -1.0, -1.0])
    turns = sum(s["source"] == "agent" for s in steps)
    invalid = sum(any(r["is_error"] for r in s["results"]) for s in steps)
    header = {**record["header"], "metrics": {"turns": turns, "valid_calls": turns - invalid, "invalid_calls": invalid}}
    return {**record, "header": header, "steps": steps}


def _failed(record: dict[str, Any]) -> dict[str, Any]:
    """The expert's first turn only, out of turns: not verified."""
    cut = {**record, "steps": record["steps"][:2]}
    cut["header"] = {**record["header"], "score": {"composite": 0.0, "passed": False, "components": {}}}
    return _rollout_shaped(cut)


@pytest.fixture(scope="module")
def expert() -> dict[str, Any]:
    record = scripted_episode(ExpertPolicy(), TASK, 3)
    assert record["header"]["score"]["passed"] and len(record["steps"]) == 4  # task, owner, lookup, answer
    return record


def _config(tiny_path: Path, out: Path, **extra: Any) -> dict[str, Any]:
    values = {
        "model": str(tiny_path),
        "task": TASK,
        "output_dir": str(out),
        "lora_r": 4,
        "learning_rate": 1e-2,
        "max_turns": 3,
        "max_new_tokens": 8,
        "eval_episodes": 1,
        "eval_every": 0,
        "steps_per_task": 2,
        "train_seeds": 10,
        "max_steps": 3,
    }
    return {**values, **extra}


def test_cleaning_drops_invalid_turns_and_rerenders_exact_masks(expert, tokenizer):
    played = _rollout_shaped(expert, invalid_after=1)
    cleaned = cleaned_record(played)
    assert [s["index"] for s in cleaned["steps"]] == [0, 1, 2, 3]
    assert all(s["token_ids"] is None and s["prompt_token_ids"] is None for s in cleaned["steps"])
    (episode,) = tokenize_record(cleaned, tokenizer)
    (reference,) = tokenize_record(expert, tokenizer)  # the expert's own record, never sampled, never cleaned
    assert episode.input_ids == reference.input_ids and episode.mask == reference.mask
    assert INVALID_TEXT not in tokenizer.decode(episode.input_ids) and 7 not in episode.input_ids
    trained = [
        tokenizer.decode([t for t, m in zip(episode.input_ids[a:b], episode.mask[a:b], strict=True) if m])
        for _, a, b in episode.agent_spans
    ]
    assert [s for s, _, _ in episode.agent_spans] == [1, 2, 3]
    assert ['"owner"' in trained[0], '"lookup"' in trained[1], '"answer"' in trained[2]] == [True, True, True]
    assert all(text.endswith(tokenizer.eos_token) for text in trained)


def test_the_teacher_reads_the_trajectory_and_its_agent_tokens_align_with_the_students(expert, tokenizer, tiny_path, tmp_path):
    config = AscentConfig(**_config(tiny_path, tmp_path))
    student, teacher, offset = teacher_view(cleaned_record(expert), tokenizer, config)
    text = trajectory_text(expert)
    assert text.splitlines()[0].startswith('Turn 1: owner({"person": ') and '"item": ' in text
    assert text in tokenizer.decode(teacher.input_ids) and text not in tokenizer.decode(student.input_ids)
    assert offset > 0 and len(teacher) == len(student) + offset
    for _, a, b in student.agent_spans:
        assert teacher.input_ids[a + offset : b + offset] == student.input_ids[a:b] and all(teacher.mask[a + offset : b + offset])


def test_disabling_the_adapter_gives_the_frozen_base_models_logits(tiny_path, expert, tokenizer):
    model, _ = load_model(str(tiny_path), lora=LoraSpec(r=4))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)  # as if the stream had adapted it
    base, _ = load_model(str(tiny_path), trainable=False)
    batch = to_device(tokenize_record(expert, tokenizer), tokenizer.pad_token_id, torch.device("cpu"))
    model.eval()
    with torch.no_grad():
        adapted = forward_logits(model, batch["input_ids"], batch["attention_mask"])
        with model.disable_adapter():
            frozen = forward_logits(model, batch["input_ids"], batch["attention_mask"])
        reference = forward_logits(base, batch["input_ids"], batch["attention_mask"])
    assert torch.allclose(frozen, reference, atol=1e-5) and not torch.allclose(adapted, reference, atol=1e-2)


def test_distill_is_forward_kl_and_sft_is_cross_entropy_on_agent_tokens():
    student = torch.tensor([[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]])  # (1, T=3, V=3)
    teacher = torch.tensor([[[5.0, 5.0, 5.0], [0.0, 2.0, 1.0], [0.0, 0.0, 0.0]]])
    batch = {"input_ids": torch.tensor([[0, 2, 1]]), "mask": torch.tensor([[0, 1, 0]]), "teacher_logits": teacher}
    # only token 1 is an agent token: it is predicted at position 0, where student and teacher are both uniform (a
    # loss read at the token's own position would compare softmax(1,0,0) with softmax(0,2,1) instead)
    loss, metrics = ascent_loss(student, batch, update="distill")
    assert loss.item() == pytest.approx(0.0, abs=1e-6) and metrics["tokens"] == 1
    batch["mask"] = torch.tensor([[0, 0, 1]])  # token 2 (id 1), predicted at position 1: teacher softmax(0,2,1), student softmax(1,0,0)
    p_t, log_p_s = torch.softmax(teacher[0, 1], -1), torch.log_softmax(student[0, 1], -1)
    expected_kl = float((p_t * (p_t.log() - log_p_s)).sum())
    loss, metrics = ascent_loss(student, batch, update="distill")
    assert loss.item() == pytest.approx(expected_kl, abs=1e-6) and metrics["forward_kl"] == pytest.approx(expected_kl, abs=1e-6)
    reverse = float((log_p_s.exp() * (log_p_s - p_t.log())).sum())
    assert expected_kl > 0.1 and abs(expected_kl - reverse) > 1e-3  # the direction matters here, and it is forward
    assert ascent_loss(student, batch, update="sft")[0].item() == pytest.approx(-float(log_p_s[1]), abs=1e-6)


def _scripted_stream(monkeypatch, expert_of, outcomes):
    """Route the recipe's rollouts to scripted records: stream seed -> (passed? + invalid turn), eval seeds fail."""

    def fake(model, tokenizer, jobs, **kwargs):
        out = []
        for _task, seed in jobs:
            record = expert_of(seed)
            out.append(_rollout_shaped(record, invalid_after=1) if outcomes.get(seed, False) else _failed(record))
        return out

    monkeypatch.setattr(ascent, "rollout_episodes", fake)


def _adapter(folder: str) -> dict[str, torch.Tensor]:
    return load_file(str(Path(folder) / "adapter_model.safetensors"))


def test_a_scripted_stream_adapts_only_after_verified_tasks_with_the_frozen_teacher(monkeypatch, tiny_path, tmp_path, tokenizer):
    config = AscentConfig(**_config(tiny_path, tmp_path, max_steps=3, save_every=1, learning_rate=1e-3))
    seeds = [stream_seed(config, i) for i in range(3)]
    assert len(set(seeds)) == 3 and all(0 <= s < 10 for s in seeds)
    _scripted_stream(monkeypatch, lambda s: scripted_episode(ExpertPolicy(), TASK, s), {seeds[0]: True, seeds[2]: True})
    seen: list[dict[str, Any]] = []
    original = ascent.ascent_loss
    monkeypatch.setattr(ascent, "ascent_loss", lambda logits, batch, update: seen.append(batch) or original(logits, batch, update=update))
    result = run_recipe("ascent", config)

    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3] and [r["task_seed"] for r in rows] == seeds
    assert [r["stream_passed"] for r in rows] == [1.0, 0.0, 1.0] and [r["updates"] for r in rows] == [2.0, 2.0, 4.0]
    assert [r["stream_pass_rate"] for r in rows] == pytest.approx([1.0, 0.5, 2 / 3])
    assert rows[0]["dropped_turns"] == 1.0 and "forward_kl" not in rows[1] and rows[2]["forward_kl"] > 0
    assert rows[0]["loss_last"] < rows[0]["loss"]  # the second step on the same trajectory moved toward the teacher
    assert "eval_pass_rate" in rows[-1] and result.steps == 3
    w = [_adapter(folder) for folder in result.checkpoints]
    b_keys = [k for k in w[0] if "lora_B" in k]
    assert b_keys and any(w[0][k].abs().sum() > 0 for k in b_keys)  # lora_B starts at zero: the first verified task moved it
    assert all(torch.equal(w[0][k], w[1][k]) for k in w[0])  # the failed attempt changed nothing
    assert any(not torch.equal(w[1][k], w[2][k]) for k in w[1])

    # the teacher of the third task (after the adapter had moved) is the frozen base given the privileged context
    batch = seen[-1]
    student, teacher, offset = teacher_view(
        cleaned_record(_rollout_shaped(scripted_episode(ExpertPolicy(), TASK, seeds[2]), invalid_after=1)), tokenizer, config
    )
    base, _ = load_model(str(tiny_path), trainable=False)
    with torch.no_grad():
        reference = forward_logits(base, torch.tensor([teacher.input_ids]), torch.ones(1, len(teacher), dtype=torch.long))
    positions = [i for i in range(len(student) - 1) if student.mask[i + 1]]
    assert batch["input_ids"][0].tolist() == student.input_ids
    assert torch.allclose(batch["teacher_logits"][0, positions], reference[0, [p + offset for p in positions]], atol=1e-5)


def test_sft_and_none_arms_and_resume_at_a_stream_position(monkeypatch, tiny_path, tmp_path):
    config = AscentConfig(**_config(tiny_path, tmp_path, max_steps=3))
    seeds = [stream_seed(config, i) for i in range(3)]
    _scripted_stream(monkeypatch, lambda s: scripted_episode(ExpertPolicy(), TASK, s), {seeds[0]: True, seeds[1]: True})
    none = run_recipe("ascent", _config(tiny_path, tmp_path / "none", max_steps=2, update="none"))
    assert all(float(v.abs().sum()) == 0 for k, v in _adapter(none.final_checkpoint).items() if "lora_B" in k)
    straight = run_recipe("ascent", _config(tiny_path, tmp_path / "a", max_steps=3, update="sft"))
    assert json.loads((tmp_path / "a" / "metrics.jsonl").read_text().splitlines()[0])["nll"] > 0
    rows_b = tmp_path / "b" / "metrics.jsonl"
    half = run_recipe(
        "ascent",
        _config(tiny_path, tmp_path / "b", max_steps=3, update="sft"),
        should_stop=lambda: rows_b.exists() and len(rows_b.read_text().splitlines()) >= 2,
    )
    assert half.steps == 2 and half.stopped
    resumed = run_recipe("ascent", _config(tiny_path, tmp_path / "b", max_steps=3, update="sft", resume_from=half.final_checkpoint))
    a, b = _adapter(straight.final_checkpoint), _adapter(resumed.final_checkpoint)
    assert resumed.steps == 3 and all(torch.allclose(a[k], b[k], atol=1e-6, rtol=0) for k in a)
    last = json.loads(rows_b.read_text().splitlines()[-1])
    assert last["stream_pass_rate"] == pytest.approx(2 / 3) and last["updates"] == 4.0  # the totals survived the resume


def test_a_real_tiny_stream_that_never_verifies_leaves_the_adapter_at_zero(tiny_path, tmp_path):
    result = run_recipe("ascent", _config(tiny_path, tmp_path, max_steps=2, temperature=1.0))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["stream_passed"] for r in rows] == [0.0, 0.0] and rows[-1]["updates"] == 0 and rows[-1]["stream_turns"] == 3
    assert all(float(v.abs().sum()) == 0 for k, v in _adapter(result.final_checkpoint).items() if "lora_B" in k)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"lora_r": 0}, "lora_r=0: ascent adapts LoRA weights"),
        ({"update": "dpo"}, "update='dpo': must be one of distill, sft, none"),
        ({"privileged_template": "no slot"}, "privileged_template='no slot': must contain {trajectory}"),
        ({"privileged_template": "{trajectory} {other}"}, "no other {...} field"),
        ({"max_steps": 11}, "max_steps=11: the stream is a single pass over train_seeds=10"),
        ({"group_size": 2}, "group_size=2: must be 1"),
        ({"temperature": -1.0}, "temperature=-1.0: must not be negative"),
        ({"lr_schedule": "cosine"}, "lr_schedule='cosine': must be constant"),
    ],
)
def test_config_errors_name_the_field_and_value(tiny_path, tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("{", r"\{").replace(".", r"\.")):
        run_recipe("ascent", _config(tiny_path, tmp_path, **extra))
