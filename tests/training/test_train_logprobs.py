"""The trainer's side of the engine: chunked logprobs, LoRA targets, the adapter-disabled reference, the on-policy check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from training.losses import onpolicy_check
from training.modeling import AdapterDisabled, LoraSpec, gather_logprobs, load_model, token_logprobs


@pytest.fixture(scope="module")
def llama() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.3,
        eos_token_id=2,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config)


def test_chunked_logprobs_and_their_gradient_equal_the_full_logits_path(llama: Any) -> None:
    ids = torch.randint(3, 300, (2, 23), generator=torch.Generator().manual_seed(1))
    attention = torch.ones_like(ids)
    attention[1, 17:] = 0  # right padding
    full = gather_logprobs(llama(input_ids=ids, attention_mask=attention).logits[:, :-1], ids[:, 1:])
    (full * attention[:, 1:]).sum().backward()
    expected_grad = llama.model.layers[0].mlp.up_proj.weight.grad.clone()
    llama.zero_grad()
    chunked = token_logprobs(llama, ids, attention, chunk_size=5)  # 22 positions: four full chunks and a short one
    (chunked * attention[:, 1:]).sum().backward()
    assert torch.allclose(chunked, full, atol=1e-5)
    assert torch.allclose(llama.model.layers[0].mlp.up_proj.weight.grad, expected_grad, atol=1e-5)
    llama.zero_grad()
    hot = token_logprobs(llama, ids, attention, temperature=0.5).detach()
    logits = llama(input_ids=ids, attention_mask=attention).logits[:, :-1].detach() / 0.5
    assert torch.allclose(hot, gather_logprobs(logits, ids[:, 1:]), atol=1e-5)


def test_lora_adapts_every_linear_layer_by_default_or_the_top_layers_only(tiny_path: Path) -> None:
    model, _ = load_model(str(tiny_path), device=torch.device("cpu"), lora=LoraSpec(r=4))
    adapted = {name.split(".lora_A")[0].rsplit(".", 1)[-1] for name, _ in model.named_parameters() if "lora_A" in name}
    assert adapted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    model, _ = load_model(str(tiny_path), device=torch.device("cpu"), lora=LoraSpec(r=4, top_layers=1))
    layers = {int(name.split(".layers.")[1].split(".")[0]) for name, _ in model.named_parameters() if "lora_A" in name}
    assert layers == {model.config.num_hidden_layers - 1}


def test_the_reference_is_the_base_with_the_adapter_disabled_sharing_its_weights(tiny_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    model, _ = load_model(str(tiny_path), device=torch.device("cpu"), lora=LoraSpec(r=4))
    base = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # a trained adapter
    model.eval()
    ids = torch.randint(3, 500, (1, 30), generator=torch.Generator().manual_seed(2))
    attention = torch.ones_like(ids)
    with torch.no_grad():
        start = token_logprobs(base, ids, attention)
        trained = token_logprobs(model, ids, attention)
        reference = token_logprobs(AdapterDisabled(model), ids, attention)
    assert not torch.allclose(trained, start, atol=1e-3)
    assert torch.allclose(reference, start, atol=1e-5)
    assert torch.allclose(token_logprobs(model, ids, attention), trained)  # the adapter is back on after the reference


def test_the_onpolicy_check_sums_the_difference_and_the_k3_kl_over_known_agent_tokens() -> None:
    sampled = torch.tensor([[-1.0, -2.0, float("nan"), -0.5]])
    recomputed = torch.tensor([[-1.5, -2.0, -3.0, -0.1]])
    mask = torch.tensor([[1, 1, 1, 0]])  # the last position is not an agent token
    diff, kl, count = onpolicy_check(sampled, recomputed, mask)
    assert count == 2 and diff == pytest.approx(0.5)
    r = torch.exp(torch.tensor(-0.5, dtype=torch.float64))
    assert kl == pytest.approx(float(r - 1 + 0.5))


def test_chunked_logprobs_and_entropy_equal_the_full_logits_with_the_same_gradient(llama: Any) -> None:
    from training.losses import entropy_bonus, entropy_term
    from training.modeling import logprobs_and_entropy

    ids = torch.randint(3, 300, (2, 19), generator=torch.Generator().manual_seed(4))
    attention = torch.ones_like(ids)
    mask = torch.zeros(2, 18)
    mask[:, 5:] = 1
    logits = llama(input_ids=ids, attention_mask=attention).logits[:, :-1]
    full_loss = entropy_bonus(logits, mask)[0] + (gather_logprobs(logits, ids[:, 1:]) * mask).sum()
    full_loss.backward()
    expected = llama.model.layers[1].self_attn.q_proj.weight.grad.clone()
    llama.zero_grad()
    logp, entropy = logprobs_and_entropy(llama, ids, attention, chunk_size=4)
    loss = entropy_term(entropy, mask)[0] + (logp * mask).sum()
    loss.backward()
    assert float(loss) == pytest.approx(float(full_loss), abs=1e-4)
    assert torch.allclose(llama.model.layers[1].self_attn.q_proj.weight.grad, expected, atol=1e-5)
    llama.zero_grad()
