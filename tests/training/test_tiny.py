from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from training.tiny import SPECIAL_TOKENS, build_tiny_model


def test_it_builds_a_qwen3_model_that_reloads_through_from_pretrained(tmp_path, tiny_path):
    model = AutoModelForCausalLM.from_pretrained(tiny_path)
    tok = AutoTokenizer.from_pretrained(tiny_path)
    assert model.config.model_type == "qwen3"
    assert (
        model.config.hidden_size,
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
        model.config.num_key_value_heads,
    ) == (64, 2, 4, 2)
    assert model.config.vocab_size == len(tok)
    for token in SPECIAL_TOKENS:
        assert len(tok.encode(token, add_special_tokens=False)) == 1, token
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>"
    assert "{% generation %}" in tok.chat_template


def test_it_is_deterministic_in_the_seed(tmp_path, tiny_path):
    again = build_tiny_model(tmp_path / "again", seed=0)
    a = AutoModelForCausalLM.from_pretrained(tiny_path).state_dict()
    b = AutoModelForCausalLM.from_pretrained(again).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert AutoTokenizer.from_pretrained(again).get_vocab() == AutoTokenizer.from_pretrained(tiny_path).get_vocab()


def test_byte_level_tokenizer_round_trips_any_text(tokenizer):
    text = 'Prix: 12,50 € — ünïcode 🙂 <tool_call>{"name": "x", "arguments": {}}</tool_call>'
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_chat_template_marks_only_assistant_bodies(tokenizer):
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "lookup", "arguments": {"item": "lamp"}}}],
        },
        {"role": "tool", "content": '{"color": "red"}'},
        {"role": "assistant", "content": "red"},
    ]
    enc = tokenizer.apply_chat_template(messages, return_assistant_tokens_mask=True, return_dict=True)
    trained = "".join(tokenizer.decode([i]) for i, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m)
    assert trained == '<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call><|im_end|>red<|im_end|>'
