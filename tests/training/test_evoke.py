from __future__ import annotations

import json
import math

import pytest
import torch

from environments.registry import make
from environments.toolgym.world import new_world
from training import run_recipe
from training.config import ConfigError, load_config
from training.data import PromptStyle, collate, tokenize_record
from training.goal_swap import agent_step_indices, goal_swap, swap_goal, swaps_for
from training.modeling import load_model, token_logprobs
from training.recipes.evoke import EvokeConfig, evoke_step_loss, rank_loss, sequence_scores, swap_episodes
from training.recipes.sft import sft_step_loss
from training.scripted import scripted_episode
from training.zoo.corpus import demo_policy

STYLE = PromptStyle(compact_tools=True, max_result_chars=400)


def expert_record(task: str, seed: int) -> dict:
    return scripted_episode(demo_policy(task, seed), task, seed, max_turns=12)


def calls(action: dict) -> list[tuple[str, dict]]:
    return [(c["name"], c["arguments"]) for c in action["tool_calls"]]


# --- goal swaps ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", ["toolgym/lookup", "toolgym/chain", "toolgym/echo", "phantom/lookup-train"])
def test_goal_swapped_states_differ_only_in_the_goal_text_of_the_first_observation(task):
    record = expert_record(task, 5)
    for step in agent_step_indices(record):
        swap = goal_swap(record, step=step, alternatives=3)
        assert swap is not None and len(swap.goals) == len(set(swap.goals)) == 4
        true_state = swap.states[0]
        assert true_state["steps"] == [s for s in record["steps"] if s["index"] < step]  # the prompt up to that turn
        for goal, state in zip(swap.goals[1:], swap.states[1:], strict=True):
            assert state["header"] == true_state["header"]  # same system prompt and tools
            assert state["steps"][1:] == true_state["steps"][1:]  # every tool result is the record's own
            first, original = state["steps"][0]["message"], true_state["steps"][0]["message"]
            assert first != original and goal in first and first.replace(goal, swap.goals[0]) == original


def test_the_goal_must_occur_once_to_be_swapped():
    steps = [{"index": 0, "source": "env", "message": "Say the word apple. Or apple."}]
    with pytest.raises(AssertionError, match="must occur once"):
        swap_goal(steps, "apple", "river")
    assert swap_goal(steps[:1], "Say the word apple. Or apple.", "x")[0]["message"] == "x"


def test_each_candidate_is_the_experts_action_under_its_own_goal_and_all_differ():
    record = expert_record("toolgym/lookup", 7)
    first, second = agent_step_indices(record)
    swap = goal_swap(record, step=first, alternatives=3)
    assert swap.actions[0]["tool_calls"] == record["steps"][first]["tool_calls"]  # the recorded action
    for seed, action in zip(swap.goal_seeds, swap.actions, strict=True):
        assert calls(action) == [("lookup", {"item": new_world("lookup", seed).target})]  # look up the asked item
    # after the lookup, only the true goal is answered; the others ask for their own item
    after = goal_swap(record, step=second, alternatives=3)
    world = new_world("lookup", 7)
    assert calls(after.actions[0]) == [("answer", {"color": world.colors[world.target]})]
    assert [calls(a) for a in after.actions[1:]] == [[("lookup", {"item": new_world("lookup", s).target})] for s in after.goal_seeds[1:]]
    assert len({repr(calls(a)) for a in after.actions}) == 4


def test_phantom_alternatives_are_other_questions_of_the_same_universe():
    record = expert_record("phantom/lookup-train", 3)
    swap = goal_swap(record, step=agent_step_indices(record)[0], alternatives=2)
    assert all(s // 100 == 0 for s in swap.goal_seeds)  # seeds 0-99 share universe 0
    for seed, action in zip(swap.goal_seeds, swap.actions, strict=True):
        env = make("phantom/lookup-train", seed)
        assert calls(action) == [("search", {"query": env.universe.by_id[env.question.support[0]].title})]


def test_goal_swaps_are_deterministic_by_salt_and_refuse_a_goal_that_never_changes():
    record = expert_record("toolgym/chain", 11)
    one, again = goal_swap(record, step=1, alternatives=3, salt=4), goal_swap(record, step=1, alternatives=3, salt=4)
    assert (one.goal_seeds, one.actions) == (again.goal_seeds, again.actions)
    assert goal_swap(record, step=1, alternatives=3, salt=5).goal_seeds != one.goal_seeds
    assert goal_swap(record, step=1, alternatives=9) is None  # only 7 other people to ask about
    with pytest.raises(AssertionError, match="same for every seed"):
        goal_swap(expert_record("toolgym/guess", 0), step=1, alternatives=1)


DESK_TASK = "servicedesk/cancel-shipped-order"


def test_the_replayed_desk_oracle_reproduces_every_action_of_its_own_record():
    from environments.servicedesk.anchors import Oracle
    from training.goal_swap import ReplayedExpert
    from training.scripted import anchor_episode

    record = anchor_episode("oracle", DESK_TASK, 3)
    env = make(DESK_TASK, 3)
    for step in agent_step_indices(record):
        position = next(i for i, s in enumerate(record["steps"]) if s["index"] == step)
        action = ReplayedExpert(lambda: Oracle(env, 3)).act(record["steps"][:position], env.tools())
        recorded = record["steps"][position]
        assert (action.message or "") == (recorded.get("message") or "")
        assert [(c.name, c.arguments) for c in action.tool_calls] == [(c["name"], c["arguments"]) for c in recorded.get("tool_calls") or []]


def test_desk_goals_swap_the_callers_opening_and_rank_the_oracles_decision_under_each():
    from environments.servicedesk.anchors import Oracle
    from training.goal_swap import ReplayedExpert
    from training.scripted import anchor_episode

    record = anchor_episode("oracle", DESK_TASK, 3)
    swaps = swaps_for([record], alternatives=2)
    assert swaps, "the oracle's refusal (the order has shipped) differs by order, so at least that state swaps"
    swap = swaps[0]
    assert swap.goals[0] == make(DESK_TASK, 3).opening and len(set(swap.goals)) == 3
    assert len({json.dumps(a, sort_keys=True) for a in swap.actions}) == 3
    for goal, seed, state, action in zip(swap.goals, swap.goal_seeds, swap.states, swap.actions, strict=True):
        env = make(DESK_TASK, seed)
        assert state["steps"][0]["message"] == goal == env.opening
        assert state["steps"][1:] == record["steps"][1 : len(state["steps"])]  # only the opening changed
        expert = ReplayedExpert(lambda env=env, seed=seed: Oracle(env, seed)).act(state["steps"], env.tools())
        assert action["message"] == (expert.message or "")


# --- the ranking loss ------------------------------------------------------------------------------------------
def test_hinge_is_zero_when_every_margin_holds_and_averages_the_violations():
    target = torch.tensor([0])
    loss, metrics = rank_loss(torch.tensor([[0.0, -0.2, -0.3]]), target, margin=0.1)
    assert loss.item() == 0.0 and metrics["rank_accuracy"] == 1.0 and metrics["rank_gap"] == pytest.approx(0.2)
    # gaps 0.5 (held) and 0.05 (short of the margin by 0.05): (0 + 0.05) / 2
    loss, _ = rank_loss(torch.tensor([[0.0, -0.5, -0.05]]), target, margin=0.1)
    assert loss.item() == pytest.approx(0.025)
    # two rows: the second's right column is 2 and it ranks last: (0.1 + 0.6) / 2 for it, 0 for the first
    loss, metrics = rank_loss(torch.tensor([[0.0, -1.0, -1.0], [0.0, 0.5, 0.0]]), torch.tensor([0, 2]), margin=0.1)
    assert loss.item() == pytest.approx((0.0 + 0.35) / 2) and metrics["rank_accuracy"] == 0.5


def test_hinge_gradient_raises_the_own_action_and_lowers_only_the_violating_ones():
    scores = torch.tensor([[0.0, -0.5, -0.05]], requires_grad=True)
    rank_loss(scores, torch.tensor([0]), margin=0.1)[0].backward()
    grad = scores.grad[0]
    assert grad[0] < 0 and grad[2] > 0 and grad[1] == 0  # descent raises column 0, lowers column 2, leaves 1
    assert grad.tolist() == pytest.approx([-0.5, 0.0, 0.5])


def test_listwise_is_a_margin_softmax_cross_entropy_and_ties_do_not_count_as_ranked_first():
    loss, metrics = rank_loss(torch.tensor([[0.0, 0.0]]), torch.tensor([0]), margin=0.0, kind="listwise")
    assert loss.item() == pytest.approx(math.log(2)) and metrics["rank_accuracy"] == 0.0
    loss, _ = rank_loss(torch.tensor([[0.0, 0.0]]), torch.tensor([0]), margin=0.5, kind="listwise")
    assert loss.item() == pytest.approx(math.log(1 + math.exp(0.5)))
    with pytest.raises(ValueError, match="kind"):
        rank_loss(torch.tensor([[0.0, 0.0]]), torch.tensor([0]), margin=0.0, kind="pairwise")


# --- sequences, scores and the step loss on the tiny model ---------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tiny_path):
    torch.manual_seed(0)
    return load_model(str(tiny_path), device=torch.device("cpu"))


@pytest.fixture(scope="module")
def lookup_swap():
    record = expert_record("toolgym/lookup", 2)
    return record, goal_swap(record, step=agent_step_indices(record)[1], alternatives=2)


def test_candidate_sequences_train_only_the_candidates_action(tiny, lookup_swap):
    _, tokenizer = tiny
    _, swap = lookup_swap
    episodes = swap_episodes(swap, tokenizer, style=STYLE, max_tokens=1024)
    assert len(episodes) == 9
    for row, episode in enumerate(episodes):
        goal, action = divmod(row, 3)
        trained = tokenizer.decode([t for t, m in zip(episode.input_ids, episode.mask, strict=True) if m])
        arguments = [next(iter(a["tool_calls"][0]["arguments"].values())) for a in swap.actions]
        assert arguments[action] in trained and not any(arguments[other] in trained for other in range(3) if other != action)
        assert swap.goals[goal] in tokenizer.decode(episode.input_ids)
    # the same action under two goals: identical trained tokens, different prompts
    a, b = episodes[0], episodes[3]
    assert [t for t, m in zip(a.input_ids, a.mask, strict=True) if m] == [t for t, m in zip(b.input_ids, b.mask, strict=True) if m]
    assert a.input_ids != b.input_ids


def test_sequence_scores_are_the_mean_log_probability_of_the_masked_tokens(tiny, lookup_swap):
    model, tokenizer = tiny
    episodes = swap_episodes(lookup_swap[1], tokenizer, style=STYLE, max_tokens=1024)[:3]
    batch = collate(episodes, pad_id=tokenizer.pad_token_id)
    with torch.no_grad():
        scores = sequence_scores(model, batch)
        logp = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
    for row, episode in enumerate(episodes):
        positions = [t - 1 for t, m in enumerate(episode.mask) if m]
        assert scores[row].item() == pytest.approx(logp[row, positions].mean().item(), abs=1e-5)


def test_with_rank_coef_zero_the_step_loss_is_the_sft_loss_value_and_gradient(tiny, lookup_swap):
    model, tokenizer = tiny
    record, swap = lookup_swap
    sft_batch = collate(tokenize_record(record, tokenizer, style=STYLE), pad_id=tokenizer.pad_token_id)
    rank_batch = collate(swap_episodes(swap, tokenizer, style=STYLE, max_tokens=1024), pad_id=tokenizer.pad_token_id)

    def grads(loss):
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in model.parameters() if p.grad is not None]

    plain, _ = sft_step_loss(model, sft_batch)
    plain_grads = grads(plain)
    zero, metrics = evoke_step_loss(model, sft_batch, rank_batch, goals=3, rank_coef=0.0, margin=0.1, kind="hinge")
    assert zero.item() == pytest.approx(plain.item(), abs=1e-6) and metrics["rank_states"] == 1.0 and "rank_accuracy" in metrics
    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(plain_grads, grads(zero), strict=True))
    both, metrics = evoke_step_loss(model, sft_batch, rank_batch, goals=3, rank_coef=2.0, margin=0.1, kind="hinge")
    assert both.item() == pytest.approx(plain.item() + 2.0 * metrics["rank_loss"], abs=1e-5)
    model.zero_grad()


def test_descending_the_ranking_loss_teaches_the_tiny_model_to_read_the_goal(tiny_path, lookup_swap):
    model, tokenizer = load_model(str(tiny_path), device=torch.device("cpu"))
    rank_batch = collate(swap_episodes(lookup_swap[1], tokenizer, style=STYLE, max_tokens=1024), pad_id=tokenizer.pad_token_id)
    sft_batch = collate(tokenize_record(lookup_swap[0], tokenizer, style=STYLE), pad_id=tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    no_sft = {**sft_batch, "mask": sft_batch["mask"] * 0}  # the ranking term alone
    first = None
    for _ in range(12):
        loss, metrics = evoke_step_loss(model, no_sft, rank_batch, goals=3, rank_coef=1.0, margin=0.1, kind="hinge")
        first = metrics if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert first["rank_accuracy"] < 1.0 and metrics["rank_loss"] < first["rank_loss"] and metrics["rank_gap"] > first["rank_gap"]


# --- the recipe ------------------------------------------------------------------------------------------------
def test_config_names_the_offending_fields(tiny_path):
    base = {"model": str(tiny_path)}
    with pytest.raises(ConfigError, match="data="):
        load_config(EvokeConfig, base)
    with pytest.raises(ConfigError, match="data="):
        load_config(EvokeConfig, {**base, "data": "x.jsonl", "tasks": ["toolgym/lookup"]})
    with pytest.raises(ConfigError, match=r"toolgym/guess \(its goal is the same"):
        load_config(EvokeConfig, {**base, "tasks": ["toolgym/guess"]})
    with pytest.raises(ConfigError, match="rank_loss='pairwise'"):
        load_config(EvokeConfig, {**base, "tasks": ["toolgym/lookup"], "rank_loss": "pairwise"})
    with pytest.raises(ConfigError, match="alternatives=0"):
        load_config(EvokeConfig, {**base, "tasks": ["toolgym/lookup"], "alternatives": 0})


def test_smoke_run_logs_ranking_metrics_and_saves_a_checkpoint(tiny_path, tmp_path):
    logged: dict[str, list[float]] = {}
    result = run_recipe(
        "evoke",
        {
            "model": str(tiny_path),
            "tasks": ["toolgym/lookup", "phantom/lookup-train"],
            "train_seeds": 3,
            "max_steps": 2,
            "batch_size": 2,
            "compact_tools": True,
            "max_result_chars": 400,
            "output_dir": str(tmp_path),
            "device": "cpu",
        },
        on_metric=lambda step, name, value: logged.setdefault(name, []).append(value),
    )
    assert result.steps == 2 and (tmp_path / "step-000002" / "training_config.json").exists()
    for name in ("loss", "nll", "rank_loss", "rank_accuracy", "rank_accuracy_true", "rank_gap"):
        assert len(logged[name]) == 2 and all(math.isfinite(v) for v in logged[name])
    assert logged["rank_states"] == [2.0, 2.0] and logged["demonstrations"] == [6.0, 6.0]


def test_swaps_for_covers_every_agent_turn():
    records = [expert_record("toolgym/chain", s) for s in (1, 2)]
    swaps = swaps_for(records, alternatives=2)
    assert [(s.seed, s.step) for s in swaps] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert len(swaps_for(records, alternatives=2, limit=4)) == 4


def test_a_data_file_of_records_trains_and_one_of_an_unswappable_task_is_refused_by_name(tiny_path, tmp_path):
    data = tmp_path / "records.jsonl"
    data.write_text("".join(json.dumps(expert_record("toolgym/echo", s)) + "\n" for s in (1, 2)))
    values = {
        "model": str(tiny_path),
        "data": str(data),
        "max_steps": 1,
        "batch_size": 2,
        "output_dir": str(tmp_path / "run"),
        "device": "cpu",
    }
    assert run_recipe("evoke", values).last_metrics["rank_states"] == 2.0
    data.write_text(json.dumps(expert_record("toolgym/guess", 1)) + "\n")
    with pytest.raises(ConfigError, match=r"data=.*toolgym/guess \(its goal is the same for every seed\)"):
        run_recipe("evoke", values)
