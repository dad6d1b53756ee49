"""The real packaged model (SmolLM2-135M-Instruct from the store) plays three turns of a short StoreBench episode
through the hf agent the console gives every project: its outputs parse (a call, or a recorded invalid call, never
an exception), the record carries the exact token ids, and a prompt cut to fit the context says so on its step.

`make test` installs the model first (make models); without it these tests say so and skip."""

from __future__ import annotations

import pytest

from environments.registry import make
from environments.replay import replay_record
from environments.runner import run_episode
from training.model_store import SMOLLM2, ModelStoreError, installed_path, read_manifest
from training.policies import harness_for, policy_from_config


@pytest.fixture(scope="module")
def smollm2() -> str:
    try:
        return str(installed_path(SMOLLM2.name))
    except ModelStoreError as exc:
        pytest.skip(f"the real model is not installed here: {exc}")


@pytest.mark.slow
def test_smollm2_plays_three_storebench_turns_with_exact_tokens_and_a_recorded_truncation(smollm2: str) -> None:
    from transformers import AutoTokenizer

    manifest = read_manifest(installed_path(SMOLLM2.name))
    assert (manifest["parameters"], manifest["context_length"], manifest["license"]) == (134_515_008, 8192, "Apache-2.0")
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    # The console's local agent, with a context small enough that the third prompt must drop an earlier turn (the first
    # prompt is 633 tokens, a turn up to ~76: 760 leaves room for one turn and the note, not two).
    config = {
        "kind": "hf",
        "name": "smollm2",
        "model": smollm2,
        "sampling": {"temperature": 0.0, "device": "cpu"},
        "harness": {"compact_tools": True, "max_result_chars": 1200, "max_turns": 3, "max_new_tokens": 48, "max_context_tokens": 808},
    }
    env = make("storebench-short/payment-outage-2d", seed=61)
    record = run_episode(env, policy_from_config(config, env, 61), max_steps=harness_for(config).max_turns)
    steps = record["steps"]
    assert record["header"]["termination_reason"] == "max_steps" and len(steps) == 4
    for step in steps[1:]:
        ids, logprobs, prompt = step["token_ids"], step["logprobs"], step["prompt_token_ids"]
        assert 1 <= len(ids) <= 48 and len(logprobs) == len(ids) and all(lp <= 1e-6 for lp in logprobs)
        assert len(prompt) <= 808 - 48  # the prompt left room for the reply
        text = tokenizer.decode(prompt)
        assert text.startswith("<|im_start|>system\nYou are an agent acting in the storebench-short environment")
        assert "end_window()" in text and text.endswith("<|im_start|>assistant\n")  # the compact tool listing
        assert step["results"] and (step["meta"].get("invalid_action") or step["tool_calls"])  # parsed, or a recorded invalid call
    truncated = [step["meta"]["context"] for step in steps[1:] if "context" in step["meta"]]
    assert truncated and all(c["omitted_turns"] >= 1 and c["prompt_tokens"] <= c["budget"] == 808 - 48 for c in truncated)
    assert "earlier turns are omitted to fit the context window" in tokenizer.decode(steps[3]["prompt_token_ids"])
    assert replay_record(record)["ok"]
