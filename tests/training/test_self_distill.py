"""Self-distillation (training/recipes/self_distill.py, training/self_teacher.py): the feedback-modeling loss, the
teacher's contexts (outcome, feedback, coach) and the token alignment between the teacher and the student."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from environments.coaching import coach_episode, coach_notes
from environments.policies import make_policy
from environments.registry import make
from training import ConfigError, run_recipe
from training.data import PromptStyle, tokenize_record
from training.modeling import forward_logits, load_model
from training.recipes.opd import distill_loss
from training.recipes.self_distill import aligned_teacher_logits, feedback_loss, teacher_batch
from training.sampling import rollout_episodes
from training.self_teacher import generation_prompt_ids, hindsight_text, note_ids, teacher_sequence

DESK = "servicedesk/roaming-on"
STYLE = PromptStyle(compact_tools=True, max_result_chars=300)


@pytest.fixture(scope="module")
def tiny(tiny_path):
    return load_model(str(tiny_path), trainable=False)


@pytest.fixture(scope="module")
def desk_record(tiny):
    """alice's call: three turns of a random agent on the service desk, the rule user's replies, the rule coach's notes."""
    model, tokenizer = tiny
    torch.manual_seed(0)
    (record,) = rollout_episodes(model, tokenizer, [(DESK, 3)], max_turns=3, max_new_tokens=8, style=STYLE)
    return coach_episode(record, make_policy("rule-coach", make(DESK, 3), 0))


@pytest.fixture(scope="module")
def lookup_record(tiny):
    model, tokenizer = tiny
    torch.manual_seed(0)
    (record,) = rollout_episodes(model, tokenizer, [("toolgym/lookup", 0)], max_turns=2, max_new_tokens=8, style=STYLE)
    return record


def test_feedback_loss_is_the_mean_next_token_nll_of_the_env_tokens():
    torch.manual_seed(0)
    logits = torch.randn(1, 5, 7)
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    env_mask = torch.tensor([[0.0, 1.0, 1.0, 0.0, 1.0]])  # tokens 1, 2 and 4 are the environment's
    loss, metrics = feedback_loss(logits, {"input_ids": ids, "env_mask": env_mask})
    logp = torch.log_softmax(logits[0], dim=-1)
    expected = -(logp[0, 1] + logp[1, 4] + logp[3, 5]) / 3  # position t predicts token t + 1
    assert loss.item() == pytest.approx(expected.item(), abs=1e-6)
    assert metrics["tokens"] == 3.0


def test_aligned_teacher_logits_take_each_rows_own_positions():
    teacher = torch.arange(2 * 5 * 3, dtype=torch.float32).view(2, 5, 3)
    positions = torch.tensor([[2, 3, 4], [0, 1, 1]])
    aligned = aligned_teacher_logits(teacher, positions)
    assert aligned.shape == (2, 3, 3)
    assert torch.equal(aligned[0], teacher[0, 2:5]) and torch.equal(aligned[1], teacher[1, [0, 1, 1]])


def _student(record, tokenizer):
    (episode,) = tokenize_record(record, tokenizer)
    return episode


@pytest.mark.parametrize("context", ["outcome", "feedback", "coach"])
def test_the_teacher_reads_every_trained_student_token_after_the_same_token(context, tiny, desk_record):
    _, tokenizer = tiny
    student = _student(desk_record, tokenizer)
    ids, positions = teacher_sequence(desk_record, student, tokenizer, context=context)
    assert len(positions) == len(student)
    trained = [t for t, m in enumerate(student.mask) if m]
    assert len(trained) > 10
    for t in trained:
        # the logit that predicts student token t is the one at t - 1; the teacher's is at positions[t - 1]
        assert ids[positions[t - 1] + 1] == student.input_ids[t] and ids[positions[t]] == student.input_ids[t]
    first = len(desk_record["steps"][1]["prompt_token_ids"])
    assert positions[first:] == sorted(set(positions[first:]))  # the student's tokens keep their order, none twice


def test_outcome_and_feedback_teachers_differ_only_by_the_score(tiny, desk_record):
    _, tokenizer = tiny
    outcome, feedback = hindsight_text(desk_record, outcome=True), hindsight_text(desk_record, outcome=False)
    assert "scored 0.00 (not passed)" in outcome and "scored" not in feedback and "passed" not in feedback
    replies = [s["message"] for s in desk_record["steps"] if s.get("role") == "user"]
    for text in (outcome, feedback):
        assert [line.split("the user said ")[1] for line in text.splitlines() if "the user said" in line] == [
            json.dumps(r) for r in replies
        ]
    first = desk_record["steps"][1]["prompt_token_ids"]
    ids, positions = teacher_sequence(desk_record, _student(desk_record, tokenizer), tokenizer, context="feedback")
    prompt = tokenizer.decode(ids[: positions[len(first) - 1] + 1])
    assert "Tools (call one as" in prompt and '"parameters"' not in prompt  # the student's compact style, not JSON schemas
    assert prompt.replace("\n\n" + feedback, "", 1) == tokenizer.decode(first)  # the student's first prompt plus the hindsight


def test_coach_notes_sit_just_before_the_turns_they_anticipate_and_nothing_else_changes(tiny, desk_record):
    _, tokenizer = tiny
    student = _student(desk_record, tokenizer)
    ids, positions = teacher_sequence(desk_record, student, tokenizer, context="coach")
    notes = coach_notes(desk_record)
    assert [n["anticipates_step"] for n in notes] == [1, 3, 5]  # each user reply coaches the actor turn before it
    tail = generation_prompt_ids(tokenizer)
    first = desk_record["steps"][1]["prompt_token_ids"]
    assert ids[: len(first) - len(tail)] == first[: -len(tail)]  # the first note comes only after the opening
    spliced = [ids[p] for p in positions]
    assert spliced == student.input_ids  # without the notes the teacher's sequence is the student's
    for note in notes:
        prompt = desk_record["steps"][note["anticipates_step"]]["prompt_token_ids"]
        insert = note_ids(tokenizer, note["note"])
        at = positions[len(prompt) - len(tail)] - len(insert)
        assert ids[at : at + len(insert) + len(tail)] == insert + tail  # the note, then the turn's generation prompt
        assert tokenizer.decode(insert).startswith("<|im_start|>user\nCoach: The user was about to say")
    assert len(ids) - len(student) == sum(len(note_ids(tokenizer, n["note"])) for n in notes)


def test_a_teacher_with_nothing_to_add_gives_exactly_zero_kl(tiny, lookup_record):
    model, tokenizer = tiny
    student = _student(lookup_record, tokenizer)
    ids, positions = teacher_sequence(lookup_record, student, tokenizer, context="coach")  # no user, so no notes
    assert ids == student.input_ids and positions == list(range(len(student)))
    batch = {k: v for k, v in teacher_batch([(lookup_record, student)], tokenizer, "coach", len(student), torch.device("cpu")).items()}
    ids_t = torch.tensor([student.input_ids])
    with torch.no_grad():
        logits = forward_logits(model, ids_t, torch.ones_like(ids_t))
        teacher = aligned_teacher_logits(forward_logits(model, batch["input_ids"], batch["attention_mask"]), batch["positions"])
    mask = torch.tensor([student.mask], dtype=torch.float32)
    value, _ = distill_loss(logits, teacher, {"input_ids": ids_t, "mask": mask}, loss="full", top_k=0)
    assert value.item() == pytest.approx(0.0, abs=1e-6)
    outcome_ids, outcome_positions = teacher_sequence(lookup_record, student, tokenizer, context="outcome")
    assert len(outcome_ids) > len(student) and outcome_positions[-1] == len(outcome_ids) - 1


def _rows(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


DESK_RUN = {
    "task": DESK,
    "tasks_per_step": 2,
    "max_turns": 3,
    "max_new_tokens": 10,
    "eval_episodes": 1,
    "eval_every": 0,
    "learning_rate": 1e-3,
    "compact_tools": True,
    "max_result_chars": 300,
    "max_steps": 1,
}


@pytest.mark.slow
def test_self_trains_on_feedback_and_distillation_together(tiny_path, tmp_path):
    result = run_recipe(
        "self_distill",
        {
            **DESK_RUN,
            "model": str(tiny_path),
            "teacher_context": "feedback",
            "feedback_modeling": True,
            "feedback_coef": 0.5,
            "output_dir": str(tmp_path),
        },
    )
    row = _rows(tmp_path / "metrics.jsonl")[-1]
    assert row["feedback_tokens"] > 0 and row["feedback_nll"] > 0 and row["teacher_extra_tokens"] > 0
    assert row["loss"] == pytest.approx(row["reverse_kl"] + 0.5 * row["feedback_nll"], rel=1e-5)  # one micro-batch
    before = AutoModelForCausalLM.from_pretrained(str(tiny_path)).state_dict()["model.norm.weight"]
    after = AutoModelForCausalLM.from_pretrained(result.final_checkpoint).state_dict()["model.norm.weight"]
    assert not torch.equal(before, after)


@pytest.mark.slow
def test_coached_self_distillation_conditions_on_the_rule_coachs_notes(tiny_path, tmp_path):
    run_recipe("self_distill", {**DESK_RUN, "model": str(tiny_path), "teacher_context": "coach", "output_dir": str(tmp_path)})
    row = _rows(tmp_path / "metrics.jsonl")[-1]
    assert row["coach_notes_per_episode"] == 3.0  # a random agent's three messages each draw a reply, so a note
    assert row["teacher_extra_tokens"] > 0 and row["reverse_kl"] > 0 and not math.isnan(row["reverse_kl"])
    assert "feedback_nll" not in row


def test_teacher_context_errors_name_the_field_and_the_task(tiny_path):
    with pytest.raises(ConfigError, match=r"teacher_context='oracle': must be one of outcome, feedback, coach"):
        run_recipe("self_distill", {"model": str(tiny_path), "teacher_context": "oracle"})
    with pytest.raises(ConfigError, match=r"task 'toolgym/lookup' has no user to coach on"):
        run_recipe("self_distill", {"model": str(tiny_path), "task": "toolgym/lookup", "teacher_context": "coach"})


def test_the_experiments_give_every_arm_a_valid_config_in_full_smoke_and_gpu_form(tiny_path):
    import training.experiments.selfdistill  # noqa: F401  (registers the three experiments)
    from training import make_config
    from training.experiments import EXPERIMENTS

    arms = {name: [(a.name, a.recipe) for a in EXPERIMENTS[name].arms] for name in ("self-lookup", "self-servicedesk", "coached")}
    assert (
        arms["self-lookup"]
        == arms["self-servicedesk"]
        == [("self", "self_distill"), ("sdpo", "self_distill"), ("grpo", "grpo"), ("none", "none")]
    )
    assert arms["coached"] == [("coached", "self_distill"), ("outcome", "self_distill"), ("none", "none")]
    for name in arms:
        experiment = EXPERIMENTS[name]
        smoke = {k: v for k, v in experiment.smoke.items() if k != "eval_episodes"}
        assert experiment.gpu is not None and experiment.train_seeds == (0, 1, 2) and not experiment.needs_teacher
        dev, test = experiment.evaluation.dev_seeds, experiment.evaluation.test_seeds
        assert dev[1] <= test[0] and experiment.shared["train_seed_start"] + experiment.shared["train_seeds"] <= dev[0]
        for arm in experiment.arms:
            if arm.recipe == "none":
                continue
            for variant in ({}, smoke, experiment.gpu.overrides):
                values = {**experiment.shared, **arm.overrides, **variant, "learning_rate": experiment.tuning["learning_rate"][0]}
                config = make_config(arm.recipe, {**values, "model": str(tiny_path), "eval_seed_start": dev[0]})
                assert config.task == experiment.evaluation.task
    self_arm, sdpo = (EXPERIMENTS["self-servicedesk"].arm(n).overrides for n in ("self", "sdpo"))
    assert {k: v for k, v in self_arm.items() if not k.startswith("feedback")} == {
        k: v for k, v in sdpo.items() if not k.startswith("feedback")
    }
