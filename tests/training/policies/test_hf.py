"""The tiny local model plays StoreBench through the hf policy on CPU (badly: the path is what is checked)."""

from __future__ import annotations

from typing import Any

import pytest

from environments.registry import make
from environments.replay import replay_record
from environments.runner import run_episode
from training.policies import harness_for, policy_from_config


def _config(tiny_path: Any, turns: int) -> dict[str, Any]:
    # StoreBench's 29 tool schemas take ~8.9k tokens with the tiny 1k-token vocabulary.
    return {
        "kind": "hf",
        "name": "tiny",
        "model": str(tiny_path),
        "sampling": {"temperature": 1.0, "device": "cpu"},
        "harness": {"max_turns": turns, "max_new_tokens": 24, "max_context_tokens": 16384},
    }


@pytest.mark.slow
def test_the_tiny_model_plays_a_storebench_episode_with_exact_token_records(tiny_path: Any, tokenizer: Any) -> None:
    config = _config(tiny_path, turns=3)
    env = make("storebench/payment-outage", seed=0)
    record = run_episode(env, policy_from_config(config, env, 0), max_steps=harness_for(config).max_turns)
    header, steps = record["header"], record["steps"]
    assert header["termination_reason"] == "max_steps" and len(steps) == 4
    assert header["policy"]["kind"] == "hf" and header["score"]["composite"] == pytest.approx(0.0)
    for step in steps[1:]:
        ids, logprobs, prompt = step["token_ids"], step["logprobs"], step["prompt_token_ids"]
        assert 1 <= len(ids) <= 24 and len(logprobs) == len(ids) and all(lp <= 0.0 for lp in logprobs)
        text = tokenizer.decode(prompt)
        assert text.startswith("<|im_start|>system\nYou are an agent acting in the storebench environment")
        assert '"name": "end_window"' in text and text.endswith("<|im_start|>assistant\n")
        # what the model wrote is recorded, and a malformed turn's error is what the next prompt shows it
        assert step["results"] and (step["meta"].get("invalid_action") or step["tool_calls"])
    second_prompt = tokenizer.decode(steps[2]["prompt_token_ids"])
    if steps[1]["meta"].get("invalid_action"):
        assert f"Error: {steps[1]['meta']['invalid_action']}" in second_prompt
    assert tokenizer.decode(steps[1]["prompt_token_ids"] + steps[1]["token_ids"]).startswith(tokenizer.decode(steps[1]["prompt_token_ids"]))
    assert replay_record(record)["ok"]


@pytest.mark.slow
def test_the_same_history_samples_the_same_tokens(tiny_path: Any) -> None:
    config = _config(tiny_path, turns=1)
    runs = []
    for _ in range(2):
        env = make("toolgym/lookup", seed=4)
        runs.append(run_episode(env, policy_from_config({**config, "harness": {"max_new_tokens": 24}}, env, 4), max_steps=1))
    assert runs[0]["steps"][1]["token_ids"] == runs[1]["steps"][1]["token_ids"]
    assert runs[0]["steps"][1]["logprobs"] == runs[1]["steps"][1]["logprobs"]
