from __future__ import annotations

from environments.trajectory import validate_record
from training.data import tokenize_record
from training.modeling import load_model, token_logprobs
from training.sampling import episode_stats, rollout_episodes


def test_rollouts_record_the_exact_ids_and_logprobs_they_sampled(tiny_path):
    model, tokenizer = load_model(str(tiny_path), trainable=False)
    records = rollout_episodes(
        model, tokenizer, [("toolgym/lookup", 0), ("toolgym/lookup", 1)], max_turns=2, max_new_tokens=12, temperature=1.0
    )
    for record in records:
        assert validate_record(record) == []
        agent = [s for s in record["steps"] if s["source"] == "agent"]
        assert len(agent) == 2  # a random model never answers correctly formatted within 12 tokens twice
        assert agent[1]["prompt_token_ids"][: len(agent[0]["prompt_token_ids"])] == agent[0]["prompt_token_ids"]  # ids concatenate
        (episode,) = tokenize_record(record, tokenizer)
        ids = __import__("torch").tensor([episode.input_ids])
        logp = token_logprobs(model, ids, ids.new_ones(ids.shape))[0]
        for step, start, end in episode.agent_spans:
            assert episode.input_ids[start:end] == next(s["token_ids"] for s in agent if s["index"] == step)
            recomputed = logp[start - 1 : end - 1].tolist()
            sampled = episode.sampled_logprobs[start:end]
            assert max(abs(a - b) for a, b in zip(recomputed, sampled, strict=True)) < 1e-3
    stats = episode_stats(records)
    assert stats["turns_mean"] == 2.0 and stats["reward_mean"] == 0.0 and stats["valid_call_rate"] == 0.0


def test_a_compact_prompt_style_lists_tools_by_name_and_cuts_results_in_samples_and_training_alike(tiny_path):
    from training.data import PromptStyle, record_messages

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    style = PromptStyle(compact_tools=True, max_result_chars=10)
    (record,) = rollout_episodes(model, tokenizer, [("toolgym/lookup", 0)], max_turns=2, max_new_tokens=8, temperature=1.0, style=style)
    agent = [s for s in record["steps"] if s["source"] == "agent"]
    prompt = tokenizer.decode(agent[1]["prompt_token_ids"])
    assert "lookup(item)\nanswer(color)" in prompt and '"parameters"' not in prompt  # names, not JSON schemas
    assert "...[cut " in prompt  # the first turn's error result, cut to 10 characters
    assert record["header"]["tools"][0]["function"]["parameters"]["required"] == ["item"]  # the record keeps full schemas
    del agent[1]["prompt_token_ids"]  # force the re-rendered path: it must produce the very prompt the sampler built
    (episode,) = tokenize_record(record, tokenizer, style=style)
    rendered = tokenizer.decode(episode.input_ids)
    assert rendered.startswith(prompt)
    tool_texts = [m["content"] for m in record_messages(record, style=style) if m["role"] == "tool"]
    assert all(len(t) <= 10 + len("...[cut 999 chars]") for t in tool_texts)
