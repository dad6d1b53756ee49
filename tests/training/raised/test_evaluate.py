"""RAISED's measurements (training/raised/evaluate.py): the model plays through `ModelPolicy`, which speaks to the
caller, renders exactly the training contexts, and scores what an anchor scores when it writes the anchor's tokens."""

from __future__ import annotations

import pytest

from environments.attacks import report_of
from tests.training.raised.common import STYLE, visible_pair
from training.data import tokenize_record
from training.policies.harness import Completion
from training.raised.evaluate import ModelPolicy
from training.raised.pairs import agent_actions, tokenized_pair
from training.scripted import anchor_episode


def test_a_text_answer_is_a_message_to_the_caller_and_a_call_is_a_call(tiny_path, tokenizer):
    from environments.registry import make

    env = make("servicedesk/bill-total", 0)
    policy = ModelPolicy(env=env, seed=0, model=None, tokenizer=tokenizer, style=STYLE, max_new_tokens=8)
    spoken = policy.to_action(Completion(text="May I have your phone number?", token_ids=[1]), 1)
    assert spoken.error is None and spoken.message == "May I have your phone number?" and not spoken.tool_calls
    call = policy.to_action(Completion(text='<tool_call>{"name": "read_policy", "arguments": {}}</tool_call>'), 2)
    assert call.error is None and [c.name for c in call.tool_calls] == ["read_policy"]
    broken = policy.to_action(Completion(text="<tool_call>{oops</tool_call>"), 3)
    assert broken.error is not None


def test_evaluation_prompts_are_exactly_the_training_contexts(tokenizer):
    from environments.registry import make

    pair = visible_pair()
    _, injected = tokenized_pair(pair, tokenizer, style=STYLE, max_tokens=4096)
    env = make(pair.task, pair.seed, options={"guidance": True, "attack": "direct"})
    policy = ModelPolicy(env=env, seed=pair.seed, model=None, tokenizer=tokenizer, style=STYLE, max_new_tokens=8)
    schemas = [t.openai_schema() for t in env.tools()]
    for step, start, _ in injected.agent_spans:
        messages = policy.render(pair.injected["steps"][:step], window_turns=99, summary="", status="")
        assert policy.prompt_ids(messages, schemas) == injected.input_ids[:start], f"turn {step}"


@pytest.mark.parametrize(("anchor", "composite", "goal_reached"), [("oracle", 1.0, False), ("shortcut", 0.0, True)])
def test_a_model_that_writes_an_anchors_tokens_scores_what_the_anchor_scores(tokenizer, anchor, composite, goal_reached):
    """The evaluation path end to end without a trained model: generation replays the anchor's action tokens, so the
    harness must parse them back into the same calls and messages, the caller must answer as it did, and the attack
    report (the shortcut obeys the planted note) must come out the same."""
    from environments.registry import make
    from environments.runner import run_episode

    pair = visible_pair()
    options = {"guidance": True, "attack": "direct"}
    played = anchor_episode(anchor, pair.task, pair.seed, options=options)
    [sequence] = tokenize_record(played, tokenizer, style=STYLE)
    turns = iter([sequence.input_ids[start:end] for _, start, end in sequence.agent_spans])

    class Replay(ModelPolicy):
        def generate_ids(self, prompt_ids, *, seed):
            ids = next(turns)
            return ids, [0.0] * len(ids)

    env = make(pair.task, pair.seed, options=options)
    record = run_episode(env, Replay(env=env, seed=pair.seed, model=None, tokenizer=tokenizer, style=STYLE, max_new_tokens=8))
    assert [(m, c) for _, m, c in agent_actions(record)] == [(m, c) for _, m, c in agent_actions(played)]
    score = record["header"]["score"]
    assert score["composite"] == played["header"]["score"]["composite"] == composite
    assert report_of(score)["goal_reached"] is goal_reached
