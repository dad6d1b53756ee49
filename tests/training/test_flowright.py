"""FloWright: the per-role workflow credit, the role-conditioned sampler, the recipe's per-role groups, its experiment."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch

from environments.relay import FINDER, REPORTER, relay_env
from environments.trajectory import make_step, new_record
from environments.workflow import GENERATOR, WORKFLOW_FORMAT
from training import ConfigError, make_config, run_recipe
from training.data import PromptStyle
from training.recipes.flowright import role_advantages, role_items, workflow_stats
from training.workflow_credit import CreditWeights, dependents, flowright_rewards, subtree_shares
from training.workflow_play import ModelRole, play_relays, team_messages


def workflow_record(composite: float, nodes: list[tuple[str, str, list[str], str]]) -> dict[str, Any]:
    """A workflow record's header as run_workflow writes it: (id, role, depends_on, status) per node."""
    graph = {
        "format": WORKFLOW_FORMAT,
        "nodes": [{"id": i, "role": r, "instruction": "x", "depends_on": d, "max_steps": 1} for i, r, d, _ in nodes],
    }
    outcomes = [{"id": i, "role": r, "status": s, "steps": int(s != "skipped"), "reward": 0.0, "score_delta": 0.0} for i, r, _, s in nodes]
    header = {
        "env": "relay",
        "task": "2-stage",
        "seed": 0,
        "score": {"composite": composite, "passed": composite == 1.0},
        "workflow": {"format": WORKFLOW_FORMAT, "graph": graph, "nodes": outcomes, "roles": {}},
    }
    return new_record(header=header, steps=[make_step(index=0, source="env", message="q")])


# the worked example: the finder finished, the reporter's answer failed, so the last stage was skipped
ALICE = workflow_record(
    0.5, [("s1-find", FINDER, [], "done"), ("s1-answer", REPORTER, ["s1-find"], "failed"), ("s2-say", REPORTER, ["s1-answer"], "skipped")]
)


# --- the credit ------------------------------------------------------------------------------------------------
def test_rewards_combine_outcome_own_nodes_and_dependents_by_hand():
    rewards = flowright_rewards(ALICE)
    # finder: O 0.5, own 1, subtree of s1-find (1 + 0 + 0) / 3           -> (0.5 + 1 + 1/3) / 3
    # reporter: only s1-answer ran (s2-say never acted): own 0, subtree 0 -> (0.5 + 0 + 0) / 3
    # generator: feasibility 2 of 3 nodes ran, 1 of 3 finished           -> (0.5 + 2/3 + 1/3) / 3
    assert rewards == pytest.approx({FINDER: (0.5 + 1 + 1 / 3) / 3, REPORTER: 0.5 / 3, GENERATOR: 0.5})
    weighted = flowright_rewards(ALICE, CreditWeights(outcome=2.0, node=1.0, graph=1.0, plan=0.0))
    assert weighted == pytest.approx({FINDER: (1.0 + 1 + 1 / 3) / 4, REPORTER: 1.0 / 4, GENERATOR: (1.0 + 1 / 3) / 3})


def test_a_node_is_credited_for_what_it_enabled_in_a_diamond():
    record = workflow_record(
        0.0,
        [("a", FINDER, [], "done"), ("b", FINDER, ["a"], "done"), ("c", REPORTER, ["a"], "failed"), ("d", REPORTER, ["b", "c"], "skipped")],
    )
    assert dependents(record["header"]["workflow"]["graph"]) == {"a": {"b", "c", "d"}, "b": {"d"}, "c": {"d"}, "d": set()}
    assert subtree_shares(record) == {"a": 2 / 4, "b": 1 / 2, "c": 0.0, "d": 0.0}
    rewards = flowright_rewards(record, CreditWeights(outcome=0.0, node=0.0, graph=1.0, plan=1.0))
    assert rewards == pytest.approx({FINDER: (0.5 + 0.5) / 2, REPORTER: 0.0, GENERATOR: (3 / 4 + 2 / 4) / 2})


def test_an_invalid_plan_earns_the_generator_nothing_and_a_role_that_never_acted_has_no_reward():
    invalid = new_record(header={"score": {"composite": 0.0}, "workflow": {"graph": None, "nodes": [], "roles": {}}}, steps=[])
    assert flowright_rewards(invalid) == {GENERATOR: 0.0}
    skipped = workflow_record(0.0, [("a", FINDER, [], "failed"), ("b", REPORTER, ["a"], "skipped")])
    assert flowright_rewards(skipped)[REPORTER] is None and flowright_rewards(skipped)[FINDER] == 0.0


def test_credit_weights_refuse_negative_and_empty_mixtures():
    with pytest.raises(AssertionError, match="node=-1"):
        CreditWeights(node=-1.0)
    with pytest.raises(AssertionError, match="outcome \\+ node \\+ graph must be positive"):
        CreditWeights(outcome=0.0, node=0.0, graph=0.0)


# --- per-role groups -------------------------------------------------------------------------------------------
def test_each_role_is_normalised_within_its_group_over_the_episodes_it_acted_in():
    rewards = [{FINDER: 1.0, REPORTER: 0.2}, {FINDER: 0.0, REPORTER: None}, {FINDER: 0.5, REPORTER: 0.4}, {FINDER: 0.5, REPORTER: 0.8}]
    out = role_advantages(rewards, [0, 0, 1, 1], [FINDER, REPORTER])
    # finder group 0: 1 and 0 -> +-1/sqrt(2) (sample std); group 1: equal -> 0
    assert out[FINDER] == pytest.approx([2**-0.5, -(2**-0.5), 0.0, 0.0], abs=1e-5)
    # reporter group 0 has one member that acted (it alone gets 0); group 1: 0.4 and 0.8 -> -+1/sqrt(2)
    assert out[REPORTER][0] == 0.0 and out[REPORTER][1] is None
    assert out[REPORTER][2:] == pytest.approx([-(2**-0.5), 2**-0.5], abs=1e-5)


# --- the sampler ---------------------------------------------------------------------------------------------------
def test_a_team_role_sees_instructions_and_the_teams_tool_work_but_not_the_plan():
    history = [
        make_step(index=0, source="env", message="Stage 1 of 1: What is the color of the lamp?"),
        make_step(index=1, source="agent", message='{"format": ...}', role=GENERATOR),
        make_step(index=2, source="system", message="[finder] gather", role=FINDER, meta={"workflow_node": "s1-find", "instruction": True}),
        make_step(
            index=3,
            source="agent",
            role=FINDER,
            tool_calls=[{"id": "c1", "name": "lookup", "arguments": {"item": "lamp"}}],
            results=[{"call_id": "c1", "content": {"item": "lamp", "color": "red"}, "is_error": False}],
        ),
        make_step(index=4, source="system", message="[reporter] answer", role=REPORTER, meta={"instruction": True}),
    ]
    tools = [{"type": "function", "function": {"name": "answer", "parameters": {"type": "object", "properties": {"color": {}}}}}]
    messages = team_messages(
        history, role=REPORTER, env_name="relay", description="Pass.", tools=tools, style=PromptStyle(compact_tools=True)
    )
    assert (
        messages[0]["content"].startswith("You are the reporter of a team in relay. Pass.") and "answer(color?)" in messages[0]["content"]
    )
    assert [m["role"] for m in messages[1:]] == ["user", "user", "assistant", "tool", "user"]
    assert messages[3]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": {"item": "lamp"}}
    assert messages[4]["content"] == '{"item": "lamp", "color": "red"}' and messages[5]["content"] == "[reporter] answer"


def scripted_generate(answers):
    """A stand-in for training.sampling.generate: each call's text is answers(prompt text); ids end with the eos."""

    def fake(model, tokenizer, prompts, *, max_new_tokens, temperature):
        (prompt,) = prompts
        ids = tokenizer(answers(tokenizer.decode(prompt)) + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        return [(list(ids), [-0.5] * len(ids))]

    return fake


def echo_answers(right: list[bool]):
    """Says the asked word on the calls whose flag is True (in turn), a wrong word otherwise."""
    calls = iter(right)

    def answer(prompt: str) -> str:
        word = re.findall(r"Say the word (\w+)", prompt)[-1] if next(calls) else "nothing"
        return f'<tool_call>{{"name": "say", "arguments": {{"word": "{word}"}}}}</tool_call>'

    return answer


def test_a_model_role_records_exactly_what_it_saw_and_sampled(monkeypatch, tokenizer):
    monkeypatch.setattr("training.workflow_play.generate", scripted_generate(echo_answers([True, False])))
    description = relay_env(["toolgym/echo"], 0, stages=1).task.description
    reporter = ModelRole(
        None,
        tokenizer,
        role=REPORTER,
        env_name="relay",
        description=description,
        style=PromptStyle(compact_tools=True),
        max_new_tokens=32,
        temperature=1.0,
    )
    good, bad = play_relays([3, 3], players={REPORTER: reporter, FINDER: reporter}, generator=None, tasks=["toolgym/echo"], stages=1)
    assert good["header"]["score"]["passed"] and not bad["header"]["score"]["passed"]
    (turn,) = [s for s in good["steps"] if s.get("role") == REPORTER and s["source"] == "agent"]
    assert turn["prompt_token_ids"] == reporter.prompt_ids(good["steps"][: turn["index"]], relay_env(["toolgym/echo"], 3, stages=1).tools())
    assert tokenizer.decode(turn["token_ids"]).endswith(tokenizer.eos_token) and turn["logprobs"] == [-0.5] * len(turn["token_ids"])
    # the trained view of that turn: the prompt as context, the sampled ids alone trained, with the role's advantage
    ((episode, advantage),) = role_items([good], {REPORTER: [0.7]}, tokenizer)
    assert advantage == 0.7 and episode.input_ids == turn["prompt_token_ids"] + turn["token_ids"]
    assert episode.mask == [0] * len(turn["prompt_token_ids"]) + [1] * len(turn["token_ids"])
    # echo's wrong word still finishes the node: O 0, own 1, subtree 1 -> 2/3; the right one 1
    assert workflow_stats([good, bad], CreditWeights())["reward_reporter"] == pytest.approx((1 + 2 / 3) / 2)


def test_invalid_output_fails_the_node_and_skips_its_dependents(monkeypatch, tokenizer):
    monkeypatch.setattr("training.workflow_play.generate", scripted_generate(lambda prompt: "I think it is red."))
    finder = ModelRole(
        None, tokenizer, role=FINDER, env_name="relay", description="d", style=PromptStyle(), max_new_tokens=8, temperature=1.0
    )
    (record,) = play_relays([0], players={FINDER: finder, REPORTER: finder}, generator=None, tasks=["toolgym/lookup"], stages=1)
    assert [(n["id"], n["status"]) for n in record["header"]["workflow"]["nodes"]] == [("s1-find", "failed"), ("s1-answer", "skipped")]
    (turn,) = [s for s in record["steps"] if s.get("role") == FINDER and s["source"] == "agent"]
    assert turn["meta"]["invalid_action"].startswith("no tool call found") and turn["meta"]["raw_output"] == "I think it is red."
    assert flowright_rewards(record) == {GENERATOR: pytest.approx((0 + 0.5 + 0) / 3), FINDER: 0.0, REPORTER: None}


def test_a_model_generator_is_trained_on_its_plan_with_the_plan_credit(monkeypatch, tokenizer):
    plan = {"format": WORKFLOW_FORMAT, "nodes": [{"id": "s1", "role": REPORTER, "instruction": "say it", "depends_on": [], "max_steps": 1}]}
    plans = iter([json.dumps(plan), "a plan, roughly"])

    def answers(prompt: str) -> str:
        return next(plans) if "You are the generator" in prompt else echo_answers([True])(prompt)

    monkeypatch.setattr("training.workflow_play.generate", scripted_generate(answers))
    style = PromptStyle(compact_tools=True)
    reporter, generator = (
        ModelRole(None, tokenizer, role=r, env_name="relay", description="d", style=style, max_new_tokens=64, temperature=1.0)
        for r in (REPORTER, GENERATOR)
    )
    valid, invalid = play_relays(
        [5, 5], players={REPORTER: reporter, FINDER: reporter}, generator=generator, tasks=["toolgym/echo"], stages=1
    )
    assert valid["header"]["score"]["passed"] and invalid["header"]["termination_reason"] == "agent_error"
    rewards = [flowright_rewards(valid), flowright_rewards(invalid)]
    assert rewards == [{GENERATOR: 1.0, REPORTER: 1.0}, {GENERATOR: 0.0}]  # O, feasibility and done share all 1; an invalid plan 0
    advantages = role_advantages(rewards, [0, 0], [GENERATOR, REPORTER])
    assert advantages[GENERATOR] == pytest.approx([2**-0.5, -(2**-0.5)], abs=1e-5) and advantages[REPORTER] == [0.0, None]
    items = role_items([valid, invalid], {GENERATOR: advantages[GENERATOR]}, tokenizer)
    assert [round(a, 4) for _, a in items] == [0.7071, -0.7071]
    assert (
        tokenizer.decode([t for t, m in zip(items[0][0].input_ids, items[0][0].mask, strict=True) if m])
        == json.dumps(plan) + tokenizer.eos_token
    )


# --- the recipe --------------------------------------------------------------------------------------------------------
def test_config_refuses_bad_roles_sources_weights_and_overlapping_seeds_by_name():
    base = {"model": "m"}
    with pytest.raises(ConfigError, match="training the generator needs generator='model'"):
        make_config("flowright", {**base, "train_roles": ["generator"]})
    with pytest.raises(ConfigError, match="train_roles=\\['critic'\\]"):
        make_config("flowright", {**base, "train_roles": ["critic"]})
    with pytest.raises(ConfigError, match="'toolgym/nope' is not a registered task"):
        make_config("flowright", {**base, "tasks": ["toolgym/nope"]})
    with pytest.raises(ConfigError, match="node=-1.0: must not be negative"):
        make_config("flowright", {**base, "node_weight": -1.0})
    with pytest.raises(ConfigError, match="others='expert'"):
        make_config("flowright", {**base, "others": "expert"})
    with pytest.raises(ConfigError, match="eval_seed_start=10: held-out seeds overlap"):
        make_config("flowright", {**base, "eval_seed_start": 10})
    assert make_config("flowright", {**base, "train_roles": ["generator"], "generator": "model"}).train_roles == ["generator"]


def test_one_step_trains_the_reporter_on_its_group_advantages_and_reports_live_metrics(monkeypatch, tiny_path, tmp_path):
    # relay seeds drawn for step 0 repeat group_size times; the scripted model says the right word on alternate turns
    monkeypatch.setattr("training.workflow_play.generate", scripted_generate(echo_answers([True, False] * 8)))
    from training.modeling import load_model

    before = {k: v.clone() for k, v in load_model(str(tiny_path), trainable=False)[0].state_dict().items()}
    seen: dict[str, float] = {}
    result = run_recipe(
        "flowright",
        {
            "model": str(tiny_path),
            "output_dir": str(tmp_path),
            "max_steps": 1,
            "tasks": ["toolgym/echo"],
            "stages": 1,
            "train_roles": ["reporter"],
            "tasks_per_step": 1,
            "group_size": 2,
            "eval_episodes": 0,
            "learning_rate": 1e-2,
        },
        on_metric=lambda step, name, value: seen.__setitem__(f"{step}:{name}", value),
    )
    assert result.steps == 1
    assert seen["1:workflow_success"] == 0.5 and seen["1:reward_reporter"] == pytest.approx((1 + 2 / 3) / 2)
    assert seen["1:turns_reporter"] == 2.0 and seen["1:tokens"] > 0 and seen["1:ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    after = load_model(result.final_checkpoint, trainable=False)[0].state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # +-1/sqrt(2) advantages moved the weights


def test_the_cli_describes_the_recipe(capsys):
    from training.__main__ import main

    assert main(["flowright", "--describe"]) == 0
    text = capsys.readouterr().out
    assert "train_roles = ['finder', 'reporter']" in text and "graph_weight = 1.0" in text and "Credit weight of a role's nodes" in text


# --- the experiment ------------------------------------------------------------------------------------------------
def test_the_experiment_compares_two_roles_one_role_and_the_untrained_workflow():
    from training.experiments import get

    experiment = get("flowright")
    assert [(a.name, a.recipe) for a in experiment.arms] == [("team", "flowright"), ("finder", "flowright"), ("none", "none")]
    assert experiment.arm("finder").overrides == {"train_roles": [FINDER]} and experiment.shared["others"] == "frozen"
    assert experiment.measures == "training.experiments.flowright:flowright_measures" and not experiment.needs_teacher


def test_measures_play_the_held_out_relays_with_the_start_model_in_untrained_roles(tiny_path):
    from training.experiments.flowright import flowright_measures

    values = {"tasks": ["toolgym/echo"], "stages": 1, "max_new_tokens": 8, "train_roles": [FINDER], "others": "frozen"}
    out = flowright_measures(str(tiny_path), str(tiny_path), values, [100_000, 100_001])
    assert set(out) >= {"workflow_success", "reward_mean", "plan_valid", "nodes_done", "reward_generator"}
    assert out["plan_valid"] == 1.0 and all(0.0 <= v <= 1.0 for v in out.values())
