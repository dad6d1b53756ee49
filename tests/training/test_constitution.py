from __future__ import annotations

import math

import pytest
import torch

from environments.riskprobe.cara import certainty_equivalent
from training.config import ConfigError
from training.recipes.constitution import (
    ConstitutionConfig,
    choice_logprobs,
    choice_reverse_kl,
    constitution_text,
    decision,
    prompted_sequence,
    sequence_reverse_kl,
    teacher_choice,
    teacher_shift,
)

COIN = ((0.5, 100.0), (0.5, 0.0))


def test_the_computed_teacher_reweights_the_base_by_the_certainty_equivalents():
    # sure 40 vs a fair coin for 100 at a = 0.01 (CE 37.9885), stake scale 100, beta 5, an indifferent base:
    # q_T(sure) = e^(5 * 0.40) / (e^(5 * 0.40) + e^(5 * 0.379885))
    ce = [40.0, certainty_equivalent(0.01, COIN)]
    q = teacher_choice([math.log(0.5), math.log(0.5)], ce, 100.0, 5.0)
    assert q[0] == pytest.approx(math.exp(2.0) / (math.exp(2.0) + math.exp(5 * ce[1] / 100)))
    assert q[0] == pytest.approx(0.52512, abs=1e-5)
    # a base preferring option 0 at 0.8, gains beta*CE/S = (1, 0): q_T(0) = 0.8e / (0.8e + 0.2); unnormalised logprobs work too
    q = teacher_choice([math.log(0.08), math.log(0.02)], [100.0, 0.0], 500.0, 5.0)
    assert q[0] == pytest.approx(0.8 * math.e / (0.8 * math.e + 0.2))
    shift = teacher_shift([math.log(0.8), math.log(0.2)], [100.0, 0.0], 500.0, 5.0)
    assert shift[0] == pytest.approx(1 - math.log(0.8 * math.e + 0.2)) and shift[1] == pytest.approx(-math.log(0.8 * math.e + 0.2))
    assert 0.8 * math.exp(shift[0]) + 0.2 * math.exp(shift[1]) == pytest.approx(1.0)  # the base's mass on choosing is kept
    # tau = 2 flattens the base first: sqrt(0.8) : sqrt(0.2) = 2/3 : 1/3, so q_T(0) = (2/3) e / ((2/3) e + 1/3) = 2e / (2e + 1)
    flat = teacher_choice([math.log(0.8), math.log(0.2)], [100.0, 0.0], 500.0, 5.0, base_temperature=2.0)
    assert flat[0] == pytest.approx(2 * math.e / (2 * math.e + 1))
    shift = teacher_shift([math.log(0.8), math.log(0.2)], [100.0, 0.0], 500.0, 5.0, base_temperature=2.0)
    assert shift[0] == pytest.approx(math.log(flat[0] / 0.8)) and 0.8 * math.exp(shift[0]) + 0.2 * math.exp(shift[1]) == pytest.approx(1.0)


def test_sequence_reverse_kl_has_the_hand_computed_value_and_sequence_level_gradient():
    logp_s = torch.tensor([[-1.0, -2.0, -0.5], [-0.1, -0.2, -0.3]], requires_grad=True)
    logp_t = torch.tensor([[-1.5, -2.0, -9.0], [-0.1, -0.2, -0.3]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    shift = torch.tensor([0.3, -0.4])
    # k = (-3 + 3.5) - 0.3 = 0.2 and 0 + 0.4 = 0.4; value mean 0.3; every trained token of sequence b gets k_b / B
    loss, metrics = sequence_reverse_kl(logp_s, logp_t, mask, shift)
    assert loss.item() == pytest.approx(0.3) and metrics["reverse_kl"] == pytest.approx(0.3) and metrics["tokens"] == 5
    loss.backward()
    assert logp_s.grad.flatten().tolist() == pytest.approx([0.1, 0.1, 0.0, 0.2, 0.2, 0.2])


def test_choice_reverse_kl_is_the_exact_kl_over_the_options():
    loss, _ = choice_reverse_kl(torch.tensor([-3.0, -3.0]), torch.tensor([math.log(0.8), math.log(0.2)]))
    assert loss.item() == pytest.approx(0.5 * math.log(0.5 / 0.8) + 0.5 * math.log(0.5 / 0.2))  # 0.22314
    assert choice_reverse_kl(torch.tensor([-1.0, -2.0]), torch.log_softmax(torch.tensor([-1.0, -2.0]), 0))[0].item() == pytest.approx(
        0.0, abs=1e-7
    )


def test_the_config_names_what_is_wrong():
    with pytest.raises(ConfigError, match="loss='full': the computed teacher"):
        ConstitutionConfig(model="m", loss="full")
    with pytest.raises(ConfigError, match="risk_aversion=0.5"):
        ConstitutionConfig(model="m", risk_aversion=0.5)
    with pytest.raises(ConfigError, match="teacher_kind='oracle'"):
        ConstitutionConfig(model="m", teacher_kind="oracle")
    assert "a = 0.002 per credit" in constitution_text(0.002)


def test_the_decision_is_the_first_valid_choice():
    from environments.policies import make_policy
    from environments.registry import make
    from training.scripted import scripted_episode

    record = scripted_episode(make_policy("averse", make("riskprobe/deal", 4), 0), "riskprobe/deal", 4)
    invalid = {**record["steps"][1], "meta": {"invalid_action": "no tool call found"}}
    record["steps"].insert(1, invalid)  # a turn whose call never reached the environment is skipped
    probe, step, choice = decision(record)
    assert probe.family == "deal" and choice == "deal" and step is record["steps"][2]


@pytest.fixture(scope="module")
def tiny(tiny_path):
    from training.modeling import load_model

    return load_model(str(tiny_path), trainable=False)


def test_option_logprobs_in_one_padded_batch_equal_each_option_scored_alone(tiny):
    from training.modeling import token_logprobs
    from training.toolcall_parse import render_tool_call

    model, tokenizer = tiny
    prompt = list(tokenizer("You hold 500 credits. Choose.", add_special_tokens=False)["input_ids"])
    batched = choice_logprobs(model, tokenizer, prompt, ("none", "partial", "full"))
    for k, name in enumerate(("none", "partial", "full")):
        turn = list(tokenizer(render_tool_call("choose", {"option": name}), add_special_tokens=False)["input_ids"]) + [
            tokenizer.eos_token_id
        ]
        ids = torch.tensor([prompt + turn])
        alone = token_logprobs(model, ids, torch.ones_like(ids))[0, len(prompt) - 1 :].sum()
        assert batched[k].item() == pytest.approx(alone.item(), abs=1e-4)


def test_the_prompted_teacher_reads_the_constitution_then_exactly_the_students_tokens(tiny):
    from training.data import tokenize_record
    from training.sampling import rollout_episodes

    model, tokenizer = tiny
    torch.manual_seed(0)
    record = rollout_episodes(model, tokenizer, [("riskprobe/lottery", 3)], max_turns=1, max_new_tokens=8)[0]
    student = tokenize_record(record, tokenizer)[0]
    ids, positions = prompted_sequence(record, student, tokenizer, constitution_text(0.002))
    first = len(record["steps"][1]["prompt_token_ids"])
    assert len(positions) == len(student)
    assert [ids[positions[t]] for t in range(first - 1, len(student))] == student.input_ids[first - 1 :]
    assert "constant absolute risk aversion" in tokenizer.decode(ids[: positions[first - 1]])


@pytest.mark.slow
def test_one_choice_step_moves_the_student_and_reports_live_metrics(tiny_path, tmp_path):
    from training import run_recipe
    from training.modeling import load_model

    seen: list[tuple[int, str, float]] = []
    config = {
        "model": str(tiny_path),
        "output_dir": str(tmp_path),
        "max_steps": 1,
        "tasks_per_step": 2,
        "max_turns": 1,
        "max_new_tokens": 8,
        "eval_episodes": 1,
        "loss": "choice",
        "learning_rate": 1e-3,
    }
    result = run_recipe("constitution", config, on_metric=lambda step, name, value: seen.append((step, name, value)))
    assert result.steps == 1
    names = {name for step, name, _ in seen if step == 1}
    assert {"choice_kl", "base_p_best", "teacher_p_best", "valid_call_rate"} <= names
    metrics = {name: value for step, name, value in seen if step == 1}
    assert metrics["choice_kl"] > 0 and metrics["teacher_p_best"] > metrics["base_p_best"]  # the teacher prefers the CE-best option
    before, after = load_model(str(tiny_path))[0], load_model(result.final_checkpoint)[0]
    assert any(not torch.equal(p, q) for p, q in zip(before.parameters(), after.parameters(), strict=True))


def test_the_experiment_measures_a_fitted_a_inside_its_interval_and_probabilities(tiny_path):
    from environments.riskprobe.fit import A_BOUNDS
    from training.experiments.constitution import constitution_measures

    measures = constitution_measures(str(tiny_path), str(tiny_path), {}, [100_000, 100_001, 100_002, 100_003])
    assert A_BOUNDS[0] <= measures["a 95% low"] <= measures["fitted a (per credit)"] <= measures["a 95% high"] <= A_BOUNDS[1]
    assert 0.0 <= measures["P(constitution's choice)"] <= 1.0 and 0.5 <= measures["consistency"] <= 1.0
