"""Per-role training views: the actor's masks exclude other roles, each role trains on its own turns with a reward."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from training.data import record_messages, record_reward, tokenize_record
from training.role_views import consult_decisions, role_steps, tokenize_role, turn_reward


def _text(tokenizer: Any, ids: list[int], mask: list[int]) -> str:
    return "".join(tokenizer.decode([i]) for i, m in zip(ids, mask, strict=True) if m)


def test_the_actors_mask_covers_only_its_own_tokens_token_by_token(team_record: dict[str, Any], tokenizer: Any) -> None:
    (episode,) = tokenize_record(team_record, tokenizer)
    messages = [{k: v for k, v in m.items() if not k.startswith("_")} for m in record_messages(team_record)]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user", "assistant"]
    enc = tokenizer.apply_chat_template(messages, tools=team_record["header"]["tools"], return_assistant_tokens_mask=True, return_dict=True)
    assert episode.input_ids == list(enc["input_ids"]) and episode.mask == list(enc["assistant_masks"])
    assert _text(tokenizer, episode.input_ids, episode.mask) == (
        '<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call><|im_end|>'
        '<tool_call>{"name": "consult", "arguments": {}}</tool_call><|im_end|>The lamp is red.<|im_end|>'
    )
    assert [s for s, _, _ in episode.agent_spans] == [1, 3, 6]
    context = tokenizer.decode(episode.input_ids)
    assert "<|im_start|>user\nCritic: Answer with the color you found.<|im_end|>" in context
    assert "<|im_start|>user\nHarness: Verify before finishing" in context and "Consultant" not in context
    # advice and harness decisions are context, not the environment's feedback
    assert "Critic" not in _text(tokenizer, episode.input_ids, episode.env_mask)
    assert episode.reward == 0.99  # the team's reward: composite minus the consultation's cost


def test_a_critics_sampled_turn_never_joins_the_actors_sampled_sequence(team_record: dict[str, Any]) -> None:
    record = copy.deepcopy(team_record)
    record["steps"] = record["steps"][:3]
    record["steps"][1].update(prompt_token_ids=[1, 2], token_ids=[3, 4], logprobs=[-0.1, -0.2])
    record["steps"][2].update(prompt_token_ids=[9, 9], token_ids=[8, 8], logprobs=[-1.0, -1.0])
    (episode,) = tokenize_record(record, tokenizer=None)
    assert episode.input_ids == [1, 2, 3, 4] and episode.mask == [0, 0, 1, 1]


def test_critic_turns_are_trained_alone_and_rewarded_by_the_outcome(team_record: dict[str, Any], tokenizer: Any) -> None:
    (example,) = tokenize_role(team_record, tokenizer, role="critic")
    assert _text(tokenizer, example.input_ids, example.mask) == "Answer with the color you found.<|im_end|>"
    prompt = tokenizer.decode(example.input_ids[: example.mask.index(1)])
    assert prompt.startswith("<|im_start|>system\nYou are alice.\n\nYou are the critic.")
    assert 'Actor calls lookup({"item":"lamp"})\nTool result: {"color":"red"}' in prompt and "<tools>" not in prompt
    assert prompt.endswith("<|im_start|>assistant\n") and "lamp is red" not in prompt  # only what came before the turn
    assert (example.reward, example.meta["role"], example.meta["step"]) == (0.99, "critic", 2)
    assert example.agent_spans == [(2, example.mask.index(1), example.mask.index(1) + sum(example.mask))]


def test_a_critic_turn_can_be_rewarded_by_the_actors_next_steps(team_record: dict[str, Any]) -> None:
    record = copy.deepcopy(team_record)
    record["steps"][3]["results"][0]["is_error"] = True
    assert turn_reward(record, 2, horizon=1) == 0.0
    assert turn_reward(record, 2, horizon=2) == 0.5
    assert turn_reward(record, 6, horizon=2) == 0.99  # no actor step follows: the outcome
    assert turn_reward(record, 2) == 0.99


def test_a_sampled_critic_turn_is_its_prompt_and_completion_ids_as_they_are(team_record: dict[str, Any], tokenizer: Any) -> None:
    record = copy.deepcopy(team_record)
    record["steps"][2].update(prompt_token_ids=[7, 8, 9], token_ids=[4, 5], logprobs=[-0.5, -0.25])
    (example,) = tokenize_role(record, tokenizer, role="critic")
    assert (example.input_ids, example.mask, example.sampled_logprobs[3:]) == ([7, 8, 9, 4, 5], [0, 0, 0, 1, 1], [-0.5, -0.25])


def test_consultant_turns_train_the_suggested_action_in_the_actors_context(team_record: dict[str, Any], tokenizer: Any) -> None:
    (example,) = tokenize_role(team_record, tokenizer, role="consultant")
    assert (
        _text(tokenizer, example.input_ids, example.mask)
        == '<tool_call>{"name": "answer", "arguments": {"color": "red"}}</tool_call><|im_end|>'
    )
    prompt = tokenizer.decode(example.input_ids)
    assert "You are the consultant." in prompt and "Critic: Answer with the color" in prompt
    assert '"name": "consult"' not in prompt.split("</tools>")[0]  # the header's tools, less the runner's own
    assert example.reward == 0.99


def test_consult_decisions_pair_each_actor_step_with_its_cost_and_the_outcome(team_record: dict[str, Any]) -> None:
    assert consult_decisions(team_record) == [
        {"step": 1, "consulted": False, "cost": 0.0, "reward": 0.99, "composite": 1.0},
        {"step": 3, "consulted": True, "cost": 0.01, "reward": 0.99, "composite": 1.0},
        {"step": 6, "consulted": False, "cost": 0.0, "reward": 0.99, "composite": 1.0},
    ]
    assert [s["index"] for s in role_steps(team_record, "actor")] == [1, 3, 6]
    assert tokenize_role(team_record, None, role="generator") == []


@pytest.mark.parametrize(
    ("header", "expected"), [({"reward": 0.7, "score": {"composite": 0.9}}, 0.7), ({"score": {"composite": 0.9}}, 0.9), ({}, None)]
)
def test_the_training_reward_is_the_headers_reward_when_present(header: dict[str, Any], expected: float | None) -> None:
    assert record_reward({"header": header, "steps": []}) == expected
