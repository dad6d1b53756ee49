from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch

import training.sampling as sampling
from environments.registry import make
from environments.replay import replay_record
from training import ConfigError, make_config, run_recipe
from training.modeling import load_model
from training.pivot_search import anchor_pivots, resolve_anchor
from training.recipes.pivotopd import (
    PivotOPDConfig,
    gold_nll,
    gold_records,
    pivot_loss,
    pivot_sequences,
    recovery_loss,
    step_sequences,
    training_records,
)
from training.sampling import continue_episodes, rollout_episodes
from training.tiny import tiny_model_path
from training.toolcall_parse import render_tool_call


@pytest.fixture(scope="module")
def student() -> tuple[Any, Any]:
    return load_model(str(tiny_model_path(0)), trainable=False)


def scripted_rollout(
    student: tuple[Any, Any], task: str, seed: int, calls: list[tuple[str, dict[str, str]]], max_turns: int
) -> dict[str, Any]:
    """One sampler episode whose turns are the given calls (generate patched to 'sample' them)."""
    model, tokenizer = student
    texts = iter(render_tool_call(name, arguments) for name, arguments in calls)

    def fake_generate(model: Any, tokenizer: Any, prompts: list[list[int]], **_: Any) -> list[tuple[list[int], list[float]]]:
        ids = [*tokenizer(next(texts), add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
        return [(ids, [0.0] * len(ids)) for _ in prompts]

    # the scripted turns replace HF generate, so the decode engine (which would sample instead) stays off
    with mock.patch.object(sampling, "generate", fake_generate), mock.patch.dict(os.environ, {"PRACTICUM_DECODE_ENGINE": "0"}):
        (record,) = rollout_episodes(model, tokenizer, [(task, seed)], max_turns=max_turns)
    return record


def chain_mistake(student: tuple[Any, Any]) -> dict[str, Any]:
    """toolgym/chain seed 0: the student asks three wrong people (three of five calls gone: the expert needs
    three more), then answers a wrong color."""
    world = make("toolgym/chain", 0).world
    wrong = [p for p in world.owners if p != world.person][:3]
    answer = next(c for c in ("red", "green") if c != world.colors[world.target])
    calls = [("owner", {"person": p}) for p in wrong] + [("answer", {"color": answer})]
    return scripted_rollout(student, "toolgym/chain", 0, calls, max_turns=5)


def _config(**values: Any) -> PivotOPDConfig:
    return make_config("pivotopd", {"model": "m", "teacher": "t", "task": "toolgym/chain", "anchor": "expert", **values})  # type: ignore[return-value]


def test_it_names_each_bad_field():
    with pytest.raises(ConfigError) as caught:
        _config(mode="half", pivot_finder="oracle", recovery_turns=0, max_pivots=0, prevention_weight=0.0, recovery_temperature=-1.0)
    assert set(caught.value.fields) >= {"mode", "pivot_finder", "recovery_turns", "max_pivots", "prevention_weight", "recovery_temperature"}
    with pytest.raises(ConfigError, match=r"anchor='nobody': no anchor 'nobody' for toolgym; choose one of expert"):
        _config(anchor="nobody")
    assert resolve_anchor("toolgym/chain", "") == ("expert", None)  # the environment's default anchor
    assert "nowhere declares no default anchor" in str(resolve_anchor("nowhere/x", "")[1])
    assert _config(task="nowhere/x", anchor="", pivot_finder="teacher").pivot_finder == "teacher"  # the teacher needs no anchor


def test_the_anchor_finds_the_call_that_left_too_few_calls_and_prevention_covers_exactly_its_tokens(student):
    record = chain_mistake(student)
    assert record["header"]["score"]["passed"] is False and replay_record(record)["ok"]
    (result,) = anchor_pivots([record], anchor="expert", seeds=(0,))
    assert (result.step, result.reason) == (3, "found")  # after the third wrong owner() two calls remain; three are needed
    assert result.checks[3]["passed"] and not result.checks[4]["passed"]
    (sequence,) = pivot_sequences(record, 3, student[1])
    ids = sequence.episode.input_ids
    (span,) = [(a, b) for step, a, b in sequence.episode.agent_spans if step == 3]
    assert [i for i, m in enumerate(sequence.prevention_mask) if m] == list(range(*span))
    assert ids[span[0] : span[1]] == record["steps"][3]["token_ids"]
    assert sum(sequence.recovery_mask) == sum(len(s["token_ids"]) for s in record["steps"][4:])  # later turns: student's here


def test_recovery_trains_on_the_teacher_turns_after_the_pivot_and_a_final_pivot_gives_prevention_only(student):
    teacher, _ = load_model(str(tiny_model_path(1)), trainable=False)
    tokenizer = student[1]
    record = chain_mistake(student)
    config = _config(recovery_turns=1, max_new_tokens=6, max_turns=5)
    (branch,), terminal = training_records([(record, 3)], config, teacher, tokenizer)
    assert terminal == 0 and len(branch["steps"]) == 5 and branch["steps"][:4] == record["steps"][:4]
    assert branch["header"]["parent"]["branch_step"] == 4
    (sequence,) = pivot_sequences(branch, 3, tokenizer)
    taught = [i for i, m in zip(sequence.episode.input_ids, sequence.recovery_mask, strict=True) if m]
    assert taught == branch["steps"][4]["token_ids"]  # the teacher's one recovery turn, nothing else

    world = make("toolgym/lookup", 0).world
    lost = scripted_rollout(student, "toolgym/lookup", 0, [("lookup", {"item": world.target}), ("answer", {"color": "nope"})], 4)
    (result,) = anchor_pivots([lost], anchor="expert", seeds=(0,))
    assert result.step == 2  # the wrong answer ended the episode: nothing to recover from
    (ended,), terminal = training_records([(lost, 2)], config, teacher, tokenizer)
    assert terminal == 1 and len(ended["steps"]) == 3
    (sequence,) = pivot_sequences(ended, 2, tokenizer)
    assert sum(sequence.recovery_mask) == 0 and sum(sequence.prevention_mask) == len(lost["steps"][2]["token_ids"])


def test_continuing_a_sampled_episode_from_its_prefix_rebuilds_the_very_prompt_ids(student):
    model, tokenizer = student
    (full,) = rollout_episodes(model, tokenizer, [("toolgym/chain", 3)], max_turns=4, max_new_tokens=8, temperature=0.0)
    (again,) = continue_episodes(model, tokenizer, [(full, 2)], max_turns=4, max_new_tokens=8, temperature=0.0)
    for mine, theirs in zip(again["steps"], full["steps"], strict=True):
        assert mine.get("prompt_token_ids") == theirs.get("prompt_token_ids") and mine.get("token_ids") == theirs.get("token_ids")
    (short,) = continue_episodes(model, tokenizer, [(full, 2)], turns=1, max_turns=4, max_new_tokens=8, temperature=0.0)
    assert len(short["steps"]) == 3 and short["steps"][2]["prompt_token_ids"] == full["steps"][2]["prompt_token_ids"]
    assert short["header"]["termination_reason"] == "max_steps" and short["header"]["source"] == "branch"


def test_forward_kl_recovery_loss_is_zero_for_the_teacher_itself_and_positive_otherwise():
    torch.manual_seed(0)
    teacher = torch.randn(2, 5, 11)
    mask = torch.tensor([[0, 1, 1, 0, 0], [0, 0, 1, 1, 1]], dtype=torch.float32)
    zero, metrics = recovery_loss(teacher.clone(), teacher, mask, top_k=0)
    assert abs(float(zero)) < 1e-6 and metrics["tokens"] == 5
    student = teacher + torch.randn(2, 5, 11)
    value, _ = recovery_loss(student, teacher, mask, top_k=0)
    by_hand = torch.nn.functional.kl_div(
        torch.log_softmax(student[:, :-1], -1), torch.log_softmax(teacher[:, :-1], -1), log_target=True, reduction="none"
    ).sum(-1)  # KL(teacher || student) per position, (B, T-1)
    assert torch.isclose(value, (by_hand * mask[:, 1:]).sum() / mask[:, 1:].sum(), atol=1e-5)
    assert float(recovery_loss(student, teacher, mask, top_k=3)[0]) > 0


def test_prevention_mode_ignores_the_recovery_tokens():
    torch.manual_seed(1)
    student, teacher = torch.randn(1, 6, 9, requires_grad=True), torch.randn(1, 6, 9)
    batch = {
        "input_ids": torch.randint(9, (1, 6)),
        "teacher_logits": teacher,
        "prevention_mask": torch.tensor([[0, 1, 1, 0, 0, 0]], dtype=torch.float32),
        "recovery_mask": torch.tensor([[0, 0, 0, 0, 1, 1]], dtype=torch.float32),
        "prevention_share": 1.0,
        "recovery_share": 1.0,
    }
    both, metrics = pivot_loss(student, batch, _config(loss="full"))
    alone, only = pivot_loss(student, batch, _config(loss="full", mode="prevention"))
    assert "recovery_forward_kl" not in only and metrics["recovery_forward_kl"] > 0
    assert torch.isclose(both - alone, torch.tensor(metrics["recovery_forward_kl"]), atol=1e-5)


def _rows(path: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_two_steps_train_on_pivots_and_a_step_without_pivots_does_not_update(tmp_path):
    from safetensors.torch import load_file

    shared = {
        "model": str(tiny_model_path(0)),
        "teacher": str(tiny_model_path(1)),
        "task": "toolgym/chain",
        "max_steps": 2,
        "tasks_per_step": 2,
        "group_size": 2,
        "max_turns": 5,
        "max_new_tokens": 8,
        "eval_episodes": 2,
        "eval_every": 0,
    }
    result = run_recipe("pivotopd", {**shared, "anchor": "expert", "output_dir": str(tmp_path / "anchor")})
    rows = _rows(tmp_path / "anchor" / "metrics.jsonl")[1:]
    # The random student never calls a tool: after its third turn two of five remain and the expert needs three.
    assert [(r["pivots_found"], r["pivot_turn_mean"], r["updated"]) for r in rows] == [(4.0, 3.0, 1.0)] * 2
    assert all(r["prevention_tokens"] > 0 and r["recovery_tokens"] > 0 and r["recovery_forward_kl"] > 0 for r in rows)
    before, after = load_file(tiny_model_path(0) / "model.safetensors"), load_file(Path(result.final_checkpoint) / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)

    # The random teacher cannot pass from the start either, so it finds no pivot: zeros, no update, steps still counted.
    result = run_recipe("pivotopd", {**shared, "pivot_finder": "teacher", "max_steps": 1, "output_dir": str(tmp_path / "teacher")})
    (row,) = _rows(tmp_path / "teacher" / "metrics.jsonl")[1:]
    assert result.steps == 1 and row["updated"] == 0.0 and row["pivots_found"] == 0.0 and row["takeover_runs"] == 4 * 6
    assert row["prevention_gold_nll"] == 0.0 and row["recovery_tokens"] == 0.0
    after = load_file(Path(result.final_checkpoint) / "model.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_teacher_taking_over_finds_the_same_pivot_as_the_anchor(student):
    """The 'teacher' plays the expert's chain moves read off its prompt (generate patched): owner, lookup, answer."""
    import re

    from training.pivot_search import teacher_pivots

    record = chain_mistake(student)
    tokenizer = student[1]

    def expert_generate(model: Any, tokenizer: Any, prompts: list[list[int]], **_: Any) -> list[tuple[list[int], list[float]]]:
        out = []
        for prompt in prompts:
            text = tokenizer.decode(prompt)
            person = re.search(r"the thing (\w+) owns", text).group(1)
            owned = re.search(rf'"person": "{person}", "item": "(\w+)"', text)
            color = owned and re.search(rf'"item": "{owned.group(1)}", "color": "(\w+)"', text)
            call = (
                ("answer", {"color": color.group(1)})
                if color
                else ("lookup", {"item": owned.group(1)})
                if owned
                else ("owner", {"person": person})
            )
            ids = [*tokenizer(render_tool_call(*call), add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
            out.append((ids, [0.0] * len(ids)))
        return out

    with mock.patch.object(sampling, "generate", expert_generate), mock.patch.dict(os.environ, {"PRACTICUM_DECODE_ENGINE": "0"}):
        (result,) = teacher_pivots(None, tokenizer, [record], max_turns=5, max_new_tokens=32, max_prompt_tokens=4096)
    assert (result.step, result.reason, result.anchor) == (3, "found", "teacher")
    assert [result.checks[cut]["passed"] for cut in (1, 2, 3, 4, 5)] == [True, True, True, False, False]


def test_the_gold_action_at_the_pivot_is_the_anchors_move_after_the_students_own_prefix(student):
    """The paper's prevention: at the pivot (the third wrong owner() call) the student is taught what the expert does
    there, asking the right person's owner, in the very context it sampled; the teacher target keeps its own call."""
    model, tokenizer = student
    record = chain_mistake(student)
    world = make("toolgym/chain", 0).world
    (gold,) = gold_records([(record, 3)], _config(), None, tokenizer)
    assert gold["steps"][:3] == record["steps"][:3] and len(gold["steps"]) == 4
    assert [(c["name"], c["arguments"]) for c in gold["steps"][3]["tool_calls"]] == [("owner", {"person": world.person})]
    (sequence,) = pivot_sequences(gold, 3, tokenizer, recovery=False)
    taught = tokenizer.decode([i for i, m in zip(sequence.episode.input_ids, sequence.prevention_mask, strict=True) if m])
    assert world.person in taught and "owner" in taught and sum(sequence.recovery_mask) == 0
    (mine,) = pivot_sequences(record, 3, tokenizer)
    start = sequence.prevention_mask.index(1)
    assert sequence.episode.input_ids[:start] == mine.episode.input_ids[: mine.prevention_mask.index(1)]  # the same context

    config = _config(mode="prevention")
    (gold_only,) = step_sequences([(record, 3)], [record], config, None, tokenizer)
    assert gold_only.prevention_mask == sequence.prevention_mask
    (own,) = step_sequences([(record, 3)], [record], _config(mode="prevention", pivot_target="teacher"), None, tokenizer)
    assert own.prevention_mask == mine.prevention_mask
    with pytest.raises(ConfigError, match="pivot_target='silver'"):
        _config(pivot_target="silver")


def test_the_gold_prevention_loss_is_the_cross_entropy_of_the_gold_tokens_and_reads_no_teacher():
    torch.manual_seed(2)
    student = torch.randn(1, 6, 9, requires_grad=True)
    ids = torch.randint(9, (1, 6))
    mask = torch.tensor([[0, 0, 1, 1, 0, 0]], dtype=torch.float32)
    by_hand = torch.nn.functional.cross_entropy(student[0, 1:3], ids[0, 2:4])
    assert torch.isclose(gold_nll(student, ids, mask), by_hand, atol=1e-5)
    batch = {
        "input_ids": ids,
        "teacher_logits": torch.full((1, 6, 9), float("nan")),  # read by the teacher target only
        "prevention_mask": mask,
        "recovery_mask": torch.zeros(1, 6),
        "prevention_share": 1.0,
        "recovery_share": 0.0,
    }
    value, metrics = pivot_loss(student, batch, _config(mode="prevention"))
    assert torch.isclose(value.detach(), by_hand.detach(), atol=1e-5) and metrics["prevention_gold_nll"] == pytest.approx(
        float(by_hand.detach()), abs=1e-5
    )
    value.backward()
    assert student.grad is not None and torch.isfinite(student.grad).all()
