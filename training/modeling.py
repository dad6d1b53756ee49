"""Loading models for training, and the log-probabilities of taken tokens computed without a full-vocab softmax.

    model, tokenizer = load_model("path/or/hub-id", lora=LoraSpec(r=8, target_modules=("q_proj", "v_proj")))
    logp = token_logprobs(model, input_ids, attention_mask)          # (B, T-1): log p(x_{t+1} | x_≤t)

bf16 on CUDA, fp32 on CPU. LoRA through peft, or full fine-tuning when `lora` is None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class LoraSpec:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")


def pretrained_kwargs(path: str) -> dict[str, Any]:
    """What every from_pretrained here passes: never run code shipped with a model, and never reach the hub for a
    path (an absolute or ./relative path is a folder; only a bare hub id may download, and only outside the lab,
    which always hands over resolved absolute paths)."""
    is_path = path.startswith(("/", "./", "../")) or os.path.isabs(path)
    return {"trust_remote_code": False, "local_files_only": is_path}


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def load_model(
    path: str,
    *,
    device: torch.device | None = None,
    lora: LoraSpec | None = None,
    gradient_checkpointing: bool = False,
    trainable: bool = True,
) -> tuple[Any, Any]:
    """A causal LM and its tokenizer from any `from_pretrained` path, ready to train (or frozen when not `trainable`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or pick_device()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(path, **pretrained_kwargs(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    # Any: a PreTrainedModel, or a PeftModel below; transformers' stubs type .to() for dtypes only.
    model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **pretrained_kwargs(path))
    model = model.to(device)
    if not trainable:
        model.eval().requires_grad_(False)
        return model, tokenizer
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        if gradient_checkpointing:
            model.enable_input_require_grads()  # frozen embeddings would otherwise cut the checkpointed graph
        config = LoraConfig(
            r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=list(lora.target_modules), task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, config)
    model.train()
    return model, tokenizer


def check_same_vocabulary(student_tokenizer: Any, teacher_tokenizer: Any) -> None:
    """Distillation compares distributions token by token, so both sides must share one vocabulary."""
    if student_tokenizer.get_vocab() != teacher_tokenizer.get_vocab():
        raise ValueError(
            f"teacher and student tokenizers differ ({len(teacher_tokenizer)} vs {len(student_tokenizer)} tokens); they must share a vocabulary"
        )


def gather_logprobs(logits: torch.Tensor, targets: torch.Tensor, chunk_size: int = 512) -> torch.Tensor:
    """log softmax(logits)[targets] for logits (B, T, V), targets (B, T) -> (B, T), in fp32 chunks over T."""
    pieces = []
    for start in range(0, logits.shape[1], chunk_size):
        chunk = logits[:, start : start + chunk_size].float()
        taken = chunk.gather(-1, targets[:, start : start + chunk_size].unsqueeze(-1)).squeeze(-1)
        pieces.append(taken - torch.logsumexp(chunk, dim=-1))
    return torch.cat(pieces, dim=1)


def forward_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) of a right-padded batch."""
    return model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T-1): the model's log-probability of each next token input_ids[:, 1:]."""
    logits = forward_logits(model, input_ids, attention_mask)
    return gather_logprobs(logits[:, :-1], input_ids[:, 1:])


def trainable_parameters(model: Any) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]
