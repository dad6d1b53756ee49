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


def test_on_the_service_desk_a_spoken_turn_is_valid_and_the_rule_user_answers_it(tiny_path):
    from training.data import PromptStyle, record_messages

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    style = PromptStyle(compact_tools=True, max_result_chars=300)
    (record,) = rollout_episodes(model, tokenizer, [("servicedesk/roaming-on", 3)], max_turns=2, max_new_tokens=8, style=style)
    assert validate_record(record) == []
    roles = [(s["source"], s.get("role")) for s in record["steps"]]
    # a random model's text has no tool call: on the service desk that is a message to the caller, who answers it
    assert roles == [("env", None), ("agent", None), ("user", "user"), ("agent", None), ("user", "user")]
    user = [s for s in record["steps"] if s.get("role") == "user"]
    assert [s["message"] for s in user] == ["Okay. What happens next?"] * 2  # RuleUser to a message that asks nothing
    assert record["header"]["metrics"] == {"turns": 2, "valid_calls": 2, "invalid_calls": 0}
    agent = [s for s in record["steps"] if s["source"] == "agent"]
    assert len(agent[0]["prompt_token_ids"]) < 600  # the compact style keeps the 24 tools' first prompt small
    second = tokenizer.decode(agent[1]["prompt_token_ids"][len(agent[0]["prompt_token_ids"]) :])
    assert second.endswith("<|im_start|>user\nOkay. What happens next?<|im_end|>\n<|im_start|>assistant\n")
    (episode,) = tokenize_record(record, tokenizer)
    between = [t for t, e in zip(episode.input_ids, episode.env_mask, strict=True) if e]
    assert "Okay. What happens next?" in tokenizer.decode(between)  # the user's reply is a feedback-modeling target
    prompt = tokenizer.decode(agent[1].pop("prompt_token_ids"))  # the re-rendered path shows the user's turn as the sampler did
    (rendered,) = tokenize_record(record, tokenizer, style=style)
    assert tokenizer.decode(rendered.input_ids).startswith(prompt)
    assert [m["role"] for m in record_messages(record, style=style)][1:] == ["user", "assistant", "user", "assistant", "user"]


def test_a_prompt_that_outgrows_its_budget_drops_its_oldest_turns_and_the_step_records_it(tiny_path):
    from training.context import omitted_count
    from training.sampling import continue_episodes

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    job = [("toolgym/chain", 3)]
    (free,) = rollout_episodes(model, tokenizer, job, max_turns=4, max_new_tokens=12, temperature=0.0, max_prompt_tokens=100_000)
    lengths = [len(s["prompt_token_ids"]) for s in free["steps"] if s["source"] == "agent"]
    assert len(lengths) == 4 and lengths == sorted(lengths)
    budget = lengths[3]  # the fourth prompt no longer fits (a prompt must be shorter than the budget); the third does
    (cut,) = rollout_episodes(model, tokenizer, job, max_turns=4, max_new_tokens=12, temperature=0.0, max_prompt_tokens=budget)
    agent = [s for s in cut["steps"] if s["source"] == "agent"]
    assert len(agent) == 4 and cut["header"]["termination_reason"] != "context_window_exceeded"
    assert [s["token_ids"] for s in agent[:3]] == [s["token_ids"] for s in free["steps"] if s["source"] == "agent"][:3]
    context = agent[3]["meta"]["context"]
    assert context["omitted_turns"] >= 1 and context["prompt_tokens"] == len(agent[3]["prompt_token_ids"]) < budget == context["budget"]
    assert not any("context" in (s.get("meta") or {}) for s in agent[:3])
    shown = tokenizer.decode(agent[3]["prompt_token_ids"])
    assert "earlier turns are omitted to fit the context window" in shown and shown.startswith(
        tokenizer.decode(agent[0]["prompt_token_ids"][:20])
    )
    note = shown[shown.index("[" + str(context["omitted_turns"]) + " earlier") :]
    assert omitted_count({"content": note}) == context["omitted_turns"]
    # a record with a cut prompt can be continued: its prefix is rebuilt and cut the same way (_resume asserts every
    # rebuilt prompt equals the recorded one), here up to the last step
    (branch,) = continue_episodes(model, tokenizer, [(cut, len(cut["steps"]))], turns=0, max_turns=4, max_prompt_tokens=budget)
    assert len(branch["steps"]) == len(cut["steps"])
    episodes = tokenize_record(cut, tokenizer)
    assert len(episodes) == 2  # the cut prompt does not extend the sequence before it: training starts a new one
