"""Sibyl: the stages, the decisive-disagreement criterion, consultation in sampled episodes (cost, masks), the run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from environments.core import Action, ToolCall
from environments.roles import CONSULT, CONSULTANT
from environments.toolgym.anchors import ExpertPolicy
from training import ConfigError, make_config, run_recipe
from training.data import record_reward, tokenize_record
from training.recipes.grpo import grpo_advantages
from training.recipes.sibyl import (
    CONSULT_TEXT,
    SibylConfig,
    call_text,
    consult_stats,
    consultation_for,
    decisive,
    disagreement_examples,
    mean_action_logprobs,
    stage_of,
)
from training.sampling import Consultation, rollout_episodes
from training.toolcall_parse import parse_tool_calls

LOOKUP_LAMP = [{"name": "lookup", "arguments": {"item": "lamp"}}]


def _config(**values: Any) -> SibylConfig:
    return SibylConfig(model="unused", **values)


def _actor_steps(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in record["steps"] if s.get("source") == "agent" and s.get("role") in (None, "actor")]


def _expert_call(record: dict[str, Any]) -> list[dict[str, Any]]:
    from environments.registry import make

    env = make(f"{record['header']['env']}/{record['header']['task']}", record["header"]["seed"])
    action = ExpertPolicy().act(record["steps"], env.tools())
    return [{"name": c.name, "arguments": c.arguments} for c in action.tool_calls]


def consult_then_follow_always(record: dict[str, Any]) -> str:
    """A router that never lets the model act: consult, do what was suggested, consult again, ..."""
    last = _actor_steps(record)[-1:] or [None]
    if last[0] is not None and [c["name"] for c in last[0]["tool_calls"]] == [CONSULT]:
        return call_text(last[0]["results"][0]["content"]["suggested_calls"])
    return CONSULT_TEXT


# --- config and stages ---------------------------------------------------------------------------------------------
def test_it_rejects_bad_fields_by_name_and_value():
    with pytest.raises(ConfigError, match="consult_cost=1.5"):
        make_config("sibyl", {"model": "m", "consult_cost": 1.5})
    with pytest.raises(ConfigError, match="stage1_steps \\+ stage2_steps = 12: more than max_steps=10"):
        make_config("sibyl", {"model": "m", "max_steps": 10, "stage1_steps": 8, "stage2_steps": 4})
    with pytest.raises(ConfigError, match="teacher='': consultant='teacher' needs"):
        make_config("sibyl", {"model": "m", "consultant": "teacher"})
    with pytest.raises(ConfigError, match="disagree_max_logp=0.5"):
        make_config("sibyl", {"model": "m", "disagree_max_logp": 0.5})
    with pytest.raises(ConfigError, match="consultant='oracle'"):
        make_config("sibyl", {"model": "m", "consultant": "oracle"})
    assert "teacher" in SibylConfig.MODEL_PATH_FIELDS  # the lab confines the teacher's weights like the model's


def test_stages_follow_one_another_and_never_consult_stays_in_stage_one():
    config = _config(max_steps=6, stage1_steps=2, stage2_steps=1)
    assert [stage_of(step, config) for step in range(6)] == [1, 1, 2, 3, 3, 3]
    no_sft = _config(max_steps=3, stage1_steps=1, stage2_steps=0)
    assert [stage_of(step, no_sft) for step in range(3)] == [1, 3, 3]
    never = _config(max_steps=4, stage1_steps=1, stage2_steps=1, consult=False)
    assert [stage_of(step, never) for step in range(4)] == [1, 1, 1, 1]


# --- the disagreement criterion ------------------------------------------------------------------------------------
def test_decisive_needs_a_different_action_and_a_low_logprob_of_the_consultants():
    answer_red = [{"name": "answer", "arguments": {"color": "red"}}]
    assert decisive(answer_red, LOOKUP_LAMP, -2.0, -1.0)  # differs, and exp(-2) ~ 0.14 per token: decisive
    assert not decisive(answer_red, LOOKUP_LAMP, -0.5, -1.0)  # differs, but the policy half-considers it already
    assert not decisive(answer_red, LOOKUP_LAMP, -1.0, -1.0)  # the threshold itself is not below it
    assert not decisive(LOOKUP_LAMP, [{"name": "lookup", "arguments": {"item": "lamp"}}], -9.0, -1.0)  # same action
    assert not decisive([], [], -9.0, -1.0)  # a consultant with no suggestion teaches nothing
    assert decisive([], LOOKUP_LAMP, -3.0, -1.0)  # an invalid turn (no call) against a real one
    two = [{"name": "f", "arguments": {"a": 1, "b": 2}}]
    assert not decisive(two, [{"name": "f", "arguments": {"b": 2, "a": 1}}], -9.0, -1.0)  # argument order does not count


def test_call_text_is_what_the_parser_and_the_chat_template_agree_on(tokenizer):
    text = call_text(LOOKUP_LAMP)
    parsed = parse_tool_calls(text)
    assert parsed.error is None and [(c.name, c.arguments) for c in parsed.tool_calls] == [("lookup", {"item": "lamp"})]
    rendered = tokenizer.apply_chat_template(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": LOOKUP_LAMP[0]}]},
        ],
        tokenize=False,
    )
    assert text in rendered
    assert parse_tool_calls(CONSULT_TEXT).tool_calls[0].name == CONSULT


def test_mean_action_logprob_is_the_mean_of_the_completions_token_logprobs(tiny_path):
    from training.modeling import load_model

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    prompts, completions = [[5, 6, 7], [8, 9]], [[10, 11], [12, 13, 14]]
    got = mean_action_logprobs(model, tokenizer.pad_token_id, prompts, completions)
    for prompt, completion, value in zip(prompts, completions, got, strict=True):
        ids = torch.tensor([prompt + completion])
        logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)  # (T, V)
        expected = sum(float(logp[len(prompt) - 1 + i, token]) for i, token in enumerate(completion)) / len(completion)
        assert value == pytest.approx(expected, abs=1e-4)


# --- consultation in sampled episodes: the answer, the cost, the masks ----------------------------------------------
def test_a_consulted_episode_is_answered_by_the_anchor_priced_and_never_reaches_the_environment(tokenizer):
    consultation = consultation_for(_config(consult_cost=0.1))
    (record,) = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 3)], max_turns=4, consultation=consultation, router=consult_then_follow_always
    )  # every turn forced: the model is never called
    header, steps = record["header"], record["steps"]
    actor = _actor_steps(record)
    assert [c["name"] for s in actor for c in s["tool_calls"]] == ["consult", "lookup", "consult", "answer"]
    assert all(s["meta"]["routed"] for s in actor) and all(math.isnan(x) for x in actor[0]["logprobs"])
    # each consultant step follows the actor step that asked, with what it suggested and what it cost
    consultants = [s for s in steps if s.get("role") == CONSULTANT]
    assert [s["index"] for s in consultants] == [actor[0]["index"] + 1, actor[2]["index"] + 1]
    assert [s["meta"]["asked_at"] for s in consultants] == [actor[0]["index"], actor[2]["index"]]
    assert actor[0]["results"][0]["content"]["suggested_calls"] == consultants[0]["meta"]["suggested_calls"]
    assert actor[1]["tool_calls"][0]["arguments"] == consultants[0]["meta"]["suggested_calls"][0]["arguments"]
    # composite 0.3 (looked up) + 0.7 (right answer) = 1.0; the reward is 1.0 - 2 x 0.1; the score is unchanged
    assert header["score"]["composite"] == pytest.approx(1.0) and header["score"]["passed"]
    assert header["reward"] == pytest.approx(0.8) and record_reward(record) == pytest.approx(0.8)
    assert header["metrics"]["consultations"] == 2 and header["team"][CONSULTANT]["cost"] == 0.1
    assert "consult" in json.dumps(header["tools"])  # the actor's prompt listed the tool
    stats = consult_stats([record, {**record, "steps": steps[:1] + [actor[1]], "header": {**header, "reward": 0.5}}])
    # consult, lookup (the follow), consult, answer (the follow): 2 decisions; the second record: 1 decision
    assert stats == pytest.approx({"consultations_mean": 1.0, "consult_rate": 2 / 3, "reward_net_mean": (0.8 + 0.5) / 2})


def test_the_consult_call_is_trained_and_the_consultants_answer_is_masked(tokenizer):
    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.05)
    (record,) = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 5)], max_turns=4, consultation=consultation, router=consult_then_follow_always
    )
    (episode,) = tokenize_record(record, tokenizer)
    trained = tokenizer.decode([t for t, m in zip(episode.input_ids, episode.mask, strict=True) if m])
    turns = [call_text(s["tool_calls"]) + tokenizer.eos_token for s in _actor_steps(record)]
    assert trained == "".join(turns)  # exactly the four actor turns, each through its end-of-turn token
    context = tokenizer.decode([t for t, e in zip(episode.input_ids, episode.env_mask, strict=True) if e])
    assert context.count("suggested_calls") == 2 and "suggested_calls" not in trained


def test_consultation_costs_move_the_group_advantages(tokenizer):
    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.1)
    consulted = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 3)], max_turns=4, consultation=consultation, router=consult_then_follow_always
    )[0]
    alone = rollout_episodes(None, tokenizer, [("toolgym/lookup", 3)], max_turns=4, router=lambda r: call_text(_expert_call(r)))[0]
    assert alone["header"]["score"]["composite"] == consulted["header"]["score"]["composite"] == pytest.approx(1.0)
    rewards = torch.tensor([record_reward(consulted), record_reward(alone)])  # 0.8 and 1.0
    advantages, _ = grpo_advantages([consulted, alone], rewards, _config(group_size=2))
    # mean 0.9, sample std sqrt(0.02) = 0.141421: -+ 0.1 / (0.141421 + 1e-6)
    assert advantages.tolist() == pytest.approx([-0.70710, 0.70710], abs=1e-4)


# --- stage 2: examples at decisive disagreements -------------------------------------------------------------------
def test_stage_two_keeps_only_the_state_where_the_policy_is_confidently_wrong(tiny_path):
    """bob looks the right item up (the expert agrees), then answers a wrong color (the expert would answer right)."""
    from training.modeling import load_model

    model, tokenizer = load_model(str(tiny_path), trainable=False)

    def bob(record: dict[str, Any]) -> str | None:
        done = len(_actor_steps(record))
        return call_text(_expert_call(record)) if done == 0 else call_text([{"name": "answer", "arguments": {"color": "plaid"}}])

    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.05)
    records = rollout_episodes(None, tokenizer, [("toolgym/lookup", 7)], max_turns=4, consultation=consultation, router=bob)
    (lookup, wrong) = _actor_steps(records[0])
    config = _config(max_turns=4, disagree_max_logp=-1.0)
    examples, stats = disagreement_examples(model, tokenizer, records, consultation, config)
    assert stats == {"states": 2.0, "disagreements": 1.0, "disagreement_rate": 0.5}  # the lookup agrees with the expert
    (example,) = examples
    assert example["header"]["meta"]["recovery"] == {"train_from_step": wrong["index"]}
    forced = _actor_steps(example)[1:]
    right = forced[1]["tool_calls"]
    assert [c["name"] for c in forced[0]["tool_calls"]] == [CONSULT] and right[0]["name"] == "answer"
    assert right[0]["arguments"] != {"color": "plaid"}
    (episode,) = tokenize_record(example, tokenizer)
    trained = tokenizer.decode([t for t, m in zip(episode.input_ids, episode.mask, strict=True) if m])
    assert trained == CONSULT_TEXT + tokenizer.eos_token + call_text(right) + tokenizer.eos_token  # bob's own lookup is context
    # the random tiny model gives any action a mean logprob near -log(V) ~ -6.9: above -20 nothing is decisive
    _, none = disagreement_examples(model, tokenizer, records, consultation, _config(max_turns=4, disagree_max_logp=-20.0))
    assert none["disagreements"] == 0.0 and none["states"] == 2.0


def test_a_state_with_no_turn_left_to_follow_the_advice_is_not_an_example(tiny_path):
    from training.modeling import load_model

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.05)
    wrong = call_text([{"name": "lookup", "arguments": {"item": "nothing"}}])
    records = rollout_episodes(None, tokenizer, [("toolgym/lookup", 7)], max_turns=2, consultation=consultation, router=lambda r: wrong)
    examples, stats = disagreement_examples(model, tokenizer, records, consultation, _config(max_turns=2))
    # turn 1: consult at turn 1 and follow at turn 2 fit; turn 2: the consult would be the last turn
    assert stats["states"] == 2.0 and stats["disagreements"] == 1.0
    assert examples[0]["header"]["meta"]["recovery"]["train_from_step"] == _actor_steps(records[0])[0]["index"]


# --- the run -------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_tiny_run_goes_through_the_three_stages_and_reports_consultation(tiny_path, tmp_path):
    seen: list[tuple[int, str, float]] = []
    result = run_recipe(
        "sibyl",
        {
            "model": str(tiny_path),
            "output_dir": str(tmp_path),
            "max_steps": 3,
            "stage1_steps": 1,
            "stage2_steps": 1,
            "tasks_per_step": 2,
            "group_size": 2,
            "max_turns": 3,
            "max_new_tokens": 24,
            "eval_episodes": 2,
            "stage2_episodes": 2,
            "disagree_max_logp": -1.0,
            "learning_rate": 1e-3,
        },
        on_metric=lambda step, name, value: seen.append((step, name, value)),
    )
    assert result.steps == 3
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in rows] == [1.0, 1.0, 2.0, 3.0]
    stage2 = rows[2]
    assert stage2["states"] >= 1 and stage2["disagreements"] >= 1 and stage2["tokens"] > 0  # a random model is wrong everywhere
    assert {"consultations_mean", "consult_rate", "reward_net_mean", "eval_consultations_mean"} <= set(rows[-1])
    assert ("eval_consultations_mean" in {name for _, name, _ in seen}) and any(n == "stage" and v == 3.0 for _, n, v in seen)
    from training.modeling import load_model

    start, _ = load_model(str(tiny_path), trainable=False)
    trained, _ = load_model(result.final_checkpoint, trainable=False)
    changed = any(not torch.equal(a, b) for a, b in zip(start.parameters(), trained.parameters(), strict=True))
    assert changed


def test_the_anchor_consultant_is_the_environments_default_anchor():
    from environments.registry import make

    env = make("toolgym/lookup", 2)
    consultant = consultation_for(_config()).consultant(env, 2)
    assert isinstance(consultant, ExpertPolicy)
    action = consultant.act([{"index": 0, "source": "env", "message": env.reset().text}], env.tools())
    assert isinstance(action, Action) and action.tool_calls[0] == ToolCall("lookup", {"item": env.world.target}, action.tool_calls[0].id)


# --- the experiment's routers and measures --------------------------------------------------------------------------
def test_decisions_do_not_count_the_turn_that_follows_a_consultation(tokenizer):
    from training.experiments.sibyl import call_rate
    from training.recipes.sibyl import decisions

    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.1)
    (consulted,) = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 3)], max_turns=4, consultation=consultation, router=consult_then_follow_always
    )
    (alone,) = rollout_episodes(None, tokenizer, [("toolgym/lookup", 3)], max_turns=4, router=lambda r: call_text(_expert_call(r)))
    assert decisions(consulted) == (2, 2) and decisions(alone) == (0, 2)  # consult+lookup, consult+answer | lookup, answer
    assert call_rate([consulted, alone]) == pytest.approx(2 / 4) and call_rate([]) == 0.0


def test_the_deferral_router_consults_at_its_rate_and_then_follows():
    from training.recipes.sibyl import deferral_router

    opening = {"header": {"seed": 11}, "steps": [{"index": 0, "source": "env", "message": "q"}]}
    after_consult = {
        "header": {"seed": 11},
        "steps": [
            *opening["steps"],
            {
                "index": 1,
                "source": "agent",
                "tool_calls": [{"id": "c", "name": CONSULT, "arguments": {}}],
                "results": [{"call_id": "c", "content": {"suggested_calls": LOOKUP_LAMP}}],
            },
        ],
    }
    assert deferral_router(0.0)(opening) is None and deferral_router(1.0)(opening) == CONSULT_TEXT
    assert deferral_router(0.0)(after_consult) == deferral_router(1.0)(after_consult) == call_text(LOOKUP_LAMP)
    import random

    draw = random.Random("11:0:3").random()  # the episode's seed, its actor turns so far, the salt
    assert (deferral_router(0.5, salt=3)(opening) == CONSULT_TEXT) == (draw < 0.5)
    consults = sum(deferral_router(0.3)({"header": {"seed": s}, "steps": opening["steps"]}) is not None for s in range(2000))
    assert 0.27 < consults / 2000 < 0.33


def test_always_consulting_solves_chain_at_three_consultations(tiny_path):
    from training.experiments.sibyl import EXPERIMENT, measures

    got = measures(str(tiny_path), str(tiny_path), dict(EXPERIMENT.shared), [100_000, 100_001])
    # consult, owner, consult, lookup, consult, answer: composite 0.15 + 0.15 + 0.7 = 1.0, less 3 x 0.05
    assert got == pytest.approx({"success": 1.0, "consultations per episode": 3.0, "call rate": 1.0, "reward net of cost": 0.85})


def test_the_random_arm_finds_the_sibyl_run_of_its_training_seed(tmp_path):
    from training.experiments.sibyl import _sibyl_checkpoint

    def run(arm: str, seed: int, checkpoint: str) -> Path:
        folder = tmp_path / arm / f"learning_rate=0.0002-seed{seed}-{arm[:3]}{seed}"
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(
            json.dumps({"arm": arm, "seed": seed, "point": {"learning_rate": 2e-4}, "checkpoint": checkpoint})
        )
        return folder

    run("sibyl", 0, "/ck/sibyl-0")
    run("sibyl", 1, "/ck/sibyl-1")
    mine = run("random", 1, "/ck/random-1")
    assert _sibyl_checkpoint(mine, json.loads((mine / "result.json").read_text())) == "/ck/sibyl-1"
    lonely = run("random", 2, "/ck/random-2")
    with pytest.raises(FileNotFoundError, match="no sibyl run for training seed 2"):
        _sibyl_checkpoint(lonely, json.loads((lonely / "result.json").read_text()))


def test_a_teacher_consultant_answers_in_its_role_within_the_turn_limit(tiny_path, tokenizer):
    config = _config(consultant="teacher", teacher=str(tiny_path), max_new_tokens=12, consult_cost=0.2)
    (record,) = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 1)], max_turns=1, consultation=consultation_for(config), router=lambda r: CONSULT_TEXT
    )
    (answer,) = [s for s in record["steps"] if s.get("role") == CONSULTANT]
    assert answer["meta"]["asked_at"] == 1 and answer["meta"]["cost"] == 0.2 and answer["meta"]["completion_tokens"] <= 12
    assert record["header"]["reward"] == pytest.approx(record["header"]["score"]["composite"] - 0.2)
    assert record["header"]["team"][CONSULTANT]["policy"]["name"] == "teacher"


def test_candidate_states_skip_the_turns_that_consult_or_follow_a_consultation(tokenizer):
    from training.recipes.sibyl import candidate_states

    def lookup_then_consult(record: dict[str, Any]) -> str:
        turns = _actor_steps(record)
        return call_text(_expert_call(record)) if not turns else consult_then_follow_always(record)

    consultation = Consultation(consultant=lambda env, seed: ExpertPolicy(), cost=0.1)
    (record,) = rollout_episodes(
        None, tokenizer, [("toolgym/lookup", 4)], max_turns=3, consultation=consultation, router=lookup_then_consult
    )
    lookup, consult, answer = _actor_steps(record)
    assert [c["name"] for s in (lookup, consult, answer) for c in s["tool_calls"]] == ["lookup", CONSULT, "answer"]
    assert candidate_states(record) == [lookup["index"]]
