from __future__ import annotations

import copy
import math

import pytest
import torch

from training.data import collate, record_messages, tokenize_record


def _text(tokenizer, ids, mask, want=1):
    return "".join(tokenizer.decode([i]) for i, m in zip(ids, mask, strict=True) if m == want)


def test_record_becomes_assistant_and_tool_messages(alice_record):
    roles = [(m["role"], m["_step"]) for m in record_messages(alice_record)]
    assert roles == [("system", -1), ("user", 0), ("assistant", 1), ("tool", 1), ("assistant", 2)]


def test_mask_matches_the_templates_assistant_mask_token_by_token(alice_record, tokenizer):
    (episode,) = tokenize_record(alice_record, tokenizer)
    messages = [{k: v for k, v in m.items() if not k.startswith("_")} for m in record_messages(alice_record)]
    enc = tokenizer.apply_chat_template(
        messages, tools=alice_record["header"]["tools"], return_assistant_tokens_mask=True, return_dict=True
    )
    assert episode.input_ids == list(enc["input_ids"])
    assert episode.mask == list(enc["assistant_masks"])
    assert _text(tokenizer, episode.input_ids, episode.mask) == (
        '<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call><|im_end|>The lamp is red.<|im_end|>'
    )
    env_text = _text(tokenizer, episode.input_ids, episode.env_mask)
    assert (
        env_text
        == '<|im_start|>user\nFind the color of the lamp.<|im_end|>\n<|im_start|>tool\n<tool_response>{"color": "red"}</tool_response><|im_end|>\n'
    )
    assert all(not (m and e) for m, e in zip(episode.mask, episode.env_mask, strict=True))
    assert [s for s, _, _ in episode.agent_spans] == [1, 2]
    for step, start, end in episode.agent_spans:
        assert episode.turn_of_token[start:end] == [step] * (end - start)
    assert episode.weights == [float(m) for m in episode.mask]
    assert episode.reward == 1.0 and not episode.truncated


def test_truncation_cuts_every_field_alike(alice_record, tokenizer):
    (full,) = tokenize_record(alice_record, tokenizer)
    first_span_end = full.agent_spans[0][2]
    cut = first_span_end - 3  # inside the first agent turn
    (short,) = tokenize_record(alice_record, tokenizer, max_tokens=cut)
    assert short.truncated and len(short) == cut
    assert short.input_ids == full.input_ids[:cut] and short.mask == full.mask[:cut] and short.env_mask == full.env_mask[:cut]
    assert short.agent_spans == [(1, full.agent_spans[0][1], cut)]
    assert sum(short.mask) == cut - full.agent_spans[0][1]


def test_step_weights_travel_with_the_tokens(alice_record, tokenizer):
    (episode,) = tokenize_record(alice_record, tokenizer, step_weight=lambda step: 0.5 if step["index"] == 1 else 2.0)
    for step, start, end in episode.agent_spans:
        assert episode.weights[start:end] == [0.5 if step == 1 else 2.0] * (end - start)
    assert sum(w for w, m in zip(episode.weights, episode.mask, strict=True) if not m) == 0


def test_sampled_token_ids_are_used_as_they_are(alice_record, tokenizer):
    record = copy.deepcopy(alice_record)
    odd = tokenizer.encode("The lamp", add_special_tokens=False) + tokenizer.encode(
        " is red.", add_special_tokens=False
    )  # not canonical BPE
    record["steps"][2]["token_ids"] = odd  # cut by the token limit: no <|im_end|>
    record["steps"][2]["logprobs"] = [-0.5] * len(odd)
    (episode,) = tokenize_record(record, tokenizer)
    step, start, end = episode.agent_spans[1]
    assert episode.input_ids[start:end] == odd and episode.sampled_logprobs[start:end] == [-0.5] * len(odd)
    assert episode.input_ids[end] == tokenizer.eos_token_id and episode.mask[end] == 0  # closing token added, not trained
    assert all(math.isnan(x) for x in episode.sampled_logprobs[:start])


def test_prompt_and_completion_ids_build_the_sequence_without_rendering(alice_record, tokenizer):
    record = copy.deepcopy(alice_record)
    eos = tokenizer.eos_token_id
    record["steps"][1].update(prompt_token_ids=[5, 6, 7], token_ids=[20, 21, eos], logprobs=[-1.0, -2.0, -0.1])
    record["steps"][2].update(prompt_token_ids=[5, 6, 7, 20, 21, eos, 30, 31], token_ids=[40, eos], logprobs=[-0.3, -0.2])
    (episode,) = tokenize_record(record, tokenizer)
    assert episode.input_ids == [5, 6, 7, 20, 21, eos, 30, 31, 40, eos]
    assert episode.mask == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert episode.env_mask == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert episode.turn_of_token == [-1, -1, -1, 1, 1, 1, 1, 1, 2, 2]
    assert episode.sampled_logprobs[3:6] == [-1.0, -2.0, -0.1] and episode.sampled_logprobs[8:] == [-0.3, -0.2]


def test_a_trimmed_context_starts_a_new_sequence(alice_record, tokenizer):
    record = copy.deepcopy(alice_record)
    record["steps"][1].update(prompt_token_ids=[5, 6, 7], token_ids=[20, 21])
    record["steps"][2].update(prompt_token_ids=[5, 9, 30], token_ids=[40])  # the harness dropped turn 1
    first, second = tokenize_record(record, tokenizer)
    assert (first.input_ids, first.mask) == ([5, 6, 7, 20, 21], [0, 0, 0, 1, 1])
    assert (second.input_ids, second.mask) == ([5, 9, 30, 40], [0, 0, 0, 1])


def test_collate_pads_right_and_keeps_masks_zero_on_padding(alice_record, tokenizer):
    (full,) = tokenize_record(alice_record, tokenizer)
    (short,) = tokenize_record(alice_record, tokenizer, max_tokens=10)
    batch = collate([full, short], pad_id=tokenizer.pad_token_id)
    assert batch["input_ids"].shape == (2, len(full))
    assert batch["attention_mask"][1].tolist() == [1] * 10 + [0] * (len(full) - 10)
    assert batch["mask"][1, 10:].sum() == 0 and torch.equal(batch["mask"][0], torch.tensor(full.mask, dtype=torch.float32))
    assert (batch["input_ids"][1, 10:] == tokenizer.pad_token_id).all()


def test_max_tokens_stops_rendering_early_with_the_same_tokens_as_cutting_the_whole(alice_record, tokenizer):
    (whole,) = tokenize_record(alice_record, tokenizer)
    (cut,) = tokenize_record(alice_record, tokenizer, max_tokens=40)
    assert cut.input_ids == whole.input_ids[:40] and cut.mask == whole.mask[:40] and len(cut) == 40


def test_a_step_marked_unusable_for_training_stays_as_context_but_is_never_trained(alice_record, tokenizer):
    record = copy.deepcopy(alice_record)
    record["steps"][2]["message"] = "The key is [REDACTED:practicum_key]."
    record["steps"][2]["meta"] = {"training_unusable": "redacted"}
    (episode,) = tokenize_record(record, tokenizer)
    assert [s for s, _, _ in episode.agent_spans] == [1]
    assert _text(tokenizer, episode.input_ids, episode.mask) == (
        '<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call><|im_end|>'
    )
    assert "[REDACTED:practicum_key]" in tokenizer.decode(episode.input_ids)  # still in the sequence, as context
    assert sum(w for w, step in zip(episode.weights, episode.turn_of_token, strict=True) if step == 2) == 0


def test_a_marked_step_with_sampled_ids_is_not_trained_either(alice_record, tokenizer):
    record = copy.deepcopy(alice_record)
    eos = tokenizer.eos_token_id
    record["steps"][1]["prompt_token_ids"], record["steps"][1]["token_ids"] = [1, 2, 3], [4, 5, eos]
    record["steps"][2]["prompt_token_ids"], record["steps"][2]["token_ids"] = [1, 2, 3, 4, 5, eos, 6], [7, 8, eos]
    record["steps"][2]["meta"] = {"training_unusable": "redacted"}
    (episode,) = tokenize_record(record, tokenizer)
    assert episode.input_ids == [1, 2, 3, 4, 5, eos, 6, 7, 8, eos]
    assert episode.mask == [0, 0, 0, 1, 1, 1, 0, 0, 0, 0]


# --- the recovery view's mark ---------------------------------------------------------------------------------------
def _marked(record, mark):
    record = copy.deepcopy(record)
    record["header"]["meta"] = {"view": "recovery", "recovery": {"train_from_step": mark}}
    return record


def test_agent_turns_before_a_recovery_mark_carry_no_loss(alice_record, tokenizer):
    whole = tokenize_record(alice_record, tokenizer)[0]
    marked = tokenize_record(_marked(alice_record, 2), tokenizer)[0]
    assert marked.input_ids == whole.input_ids  # the prefix stays in the sequence as context
    trained_steps = {step for step, m in zip(marked.turn_of_token, marked.mask, strict=True) if m}
    assert {step for step, m in zip(whole.turn_of_token, whole.mask, strict=True) if m} == {1, 2}
    assert trained_steps == {2}
    assert all(w == 0.0 for step, w in zip(marked.turn_of_token, marked.weights, strict=True) if step == 1)
    assert [span[0] for span in marked.agent_spans] == [2]
    batch = collate([marked], pad_id=tokenizer.pad_token_id)
    assert float(batch["mask"].sum()) == sum(1 for step, m in zip(whole.turn_of_token, whole.mask, strict=True) if m and step == 2)


def test_the_sft_loss_has_no_gradient_on_tokens_before_the_mark(alice_record, tokenizer):
    from training.losses import sft_loss

    episode = tokenize_record(_marked(alice_record, 2), tokenizer)[0]
    batch = collate([episode], pad_id=tokenizer.pad_token_id)
    logits = torch.zeros(1, len(episode), len(tokenizer), requires_grad=True)  # (B, T, V)
    loss, _ = sft_loss(logits[:, :-1], batch["input_ids"][:, 1:], batch["mask"][:, 1:], batch["weights"][:, 1:])
    loss.backward()
    assert loss.item() == pytest.approx(math.log(len(tokenizer)))  # uniform logits: log V per trained token
    touched = logits.grad.abs().sum(-1)[0]  # (T,): position t predicts token t + 1
    steps_predicted = episode.turn_of_token[1:]
    assert all(touched[t] == 0 for t, step in enumerate(steps_predicted) if step == 1)
    assert any(touched[t] > 0 for t, step in enumerate(steps_predicted) if step == 2)


def test_the_mark_is_honoured_on_sampled_ids_too(alice_record):
    record = _marked(alice_record, 2)
    record["steps"][1].update(prompt_token_ids=[1, 2], token_ids=[3, 4])
    record["steps"][2].update(prompt_token_ids=[1, 2, 3, 4, 5], token_ids=[6, 7])
    episode = tokenize_record(record, tokenizer=None)[0]
    assert episode.input_ids == [1, 2, 3, 4, 5, 6, 7]
    assert episode.mask == [0, 0, 0, 0, 0, 1, 1]


def test_a_mark_that_is_not_a_step_index_is_refused(alice_record, tokenizer):
    with pytest.raises(AssertionError, match="train_from_step"):
        tokenize_record(_marked(alice_record, "2"), tokenizer)


def test_sft_trains_a_recovery_export_from_its_corrected_step(tokenizer):
    from environments.diagnosis.branching import verify_correction
    from environments.diagnosis.exports import recovery_example
    from training.diagnoser_eval import weak_episode, weak_factory

    record = weak_episode("toolgym/chain", 2)  # wrong_color: owner, lookup, answer a wrong colour at step 3
    outcome = verify_correction(
        record, step_index=3, correction={"name": "lookup", "arguments": {"item": "x"}}, policy_factory=weak_factory, continuation_seed=0
    )
    diagnosis = {"step_index": 3, "category": "wrong_arguments", "explanation": "e", "correction": {"name": "lookup", "arguments": {}}}
    example = recovery_example(outcome.corrected.record, diagnosis)
    episode = tokenize_record(example, tokenizer)[0]
    assert {step for step, m in zip(episode.turn_of_token, episode.mask, strict=True) if m} == {
        s["index"] for s in example["steps"] if s["source"] == "agent" and s["index"] >= 3
    }


def test_packing_puts_short_episodes_in_one_row_and_trains_exactly_the_agents_tokens(alice_record, tokenizer):
    from training.data import collate_packed

    (full,) = tokenize_record(alice_record, tokenizer)
    (short,) = tokenize_record(alice_record, tokenizer, max_tokens=len(full) // 3)
    batch = collate_packed([short, full, short], pad_id=tokenizer.pad_token_id)
    assert batch["input_ids"].shape == (2, len(full))  # the full episode alone, the two short ones side by side
    row = batch["position_ids"][1].tolist()
    assert row[: len(short)] == list(range(len(short))) and row[len(short) : 2 * len(short)] == list(range(len(short)))
    assert batch["mask"].sum() == sum(sum(e.mask[1:]) for e in (full, short, short))  # nothing gained, nothing lost
    assert batch["mask"][1, len(short)] == 0 and batch["mask"][1, 2 * len(short) :].sum() == 0


def test_a_packed_micro_batch_has_the_loss_and_gradients_of_the_padded_one(alice_record, tokenizer, tiny_path):
    from training.data import collate_packed
    from training.modeling import load_model
    from training.recipes.sft import sft_step_loss

    model, _ = load_model(str(tiny_path))
    (full,) = tokenize_record(alice_record, tokenizer)
    (short,) = tokenize_record(alice_record, tokenizer, max_tokens=len(full) // 2)
    short.mask[0] = 0  # the padded batch does not train an episode's first token either (nothing predicts it)
    results = []
    for collator in (collate, collate_packed):
        model.zero_grad()
        loss, metrics = sft_step_loss(model, collator([full, short, short], pad_id=tokenizer.pad_token_id))
        loss.backward()
        results.append((loss.item(), metrics["token_accuracy"], [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (padded_loss, padded_acc, padded_grads), (packed_loss, packed_acc, packed_grads) = results
    assert packed_loss == pytest.approx(padded_loss, abs=1e-5) and packed_acc == pytest.approx(padded_acc)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(padded_grads, packed_grads, strict=True))
