"""Loading models for training, and the log-probabilities of taken tokens computed without a full-vocab softmax.

    model, tokenizer = load_model("path/or/hub-id", lora=LoraSpec(r=8, target_modules=("q_proj", "v_proj")))
    logp = token_logprobs(model, input_ids, attention_mask)          # (B, T-1): log p(x_{t+1} | x_≤t)

bf16 on CUDA, fp32 on CPU. LoRA through peft (all linear layers of the decoder by default, or those of the top
`top_layers` layers only), or full fine-tuning when `lora` is None.

`token_logprobs` never holds the (B, T, V) logits of a 49k vocabulary: for the architectures the decode engine runs
(training.decode.supports) it runs the decoder to its final hidden states and the lm_head over a chunk of positions
at a time; under autograd each chunk is checkpointed, so backward recomputes one chunk's logits at a time too.
`AdapterDisabled(model)` is a LoRA model's base (the adapter switched off), used as the frozen reference policy
without a second copy of the weights.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from training.losses import HiddenLogits, Logits, chunked


@dataclass(frozen=True)
class LoraSpec:
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("all-linear",)  # peft's every linear layer but the output head
    top_layers: int = 0  # adapt only the last `top_layers` decoder layers (0: all)

    def peft_config(self, model: Any) -> Any:
        from peft import LoraConfig

        targets: Any = "all-linear" if self.target_modules == ("all-linear",) else list(self.target_modules)
        num_layers = int(model.config.num_hidden_layers)
        layers = list(range(max(num_layers - self.top_layers, 0), num_layers)) if self.top_layers else None
        if layers is not None and targets == "all-linear":  # peft takes a layer list only with module names: the decoder's linears
            targets = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in n})
        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=targets,
            layers_to_transform=layers,
            task_type="CAUSAL_LM",
        )


def pretrained_kwargs(path: str) -> dict[str, Any]:
    """What every from_pretrained here passes: never run code shipped with a model, and never reach the hub for a
    path (an absolute or ./relative path is a folder; only a bare hub id may download, and only outside the lab,
    which always hands over resolved absolute paths)."""
    is_path = path.startswith(("/", "./", "../")) or os.path.isabs(path)
    return {"trust_remote_code": False, "local_files_only": is_path}


# transformers is not thread-safe to load from: two loads at once in one process (the embedded worker runs jobs in
# threads: an evaluation's seeds of one checkpoint) fail with "Cannot copy out of meta tensor" (a tied output head
# lost), or with "cannot import name 'AutoModelForCausalLM'" when the first ones race through its lazy imports.
PRETRAINED_LOCK = threading.Lock()


def pretrained(path: str, *, dtype: torch.dtype, device: torch.device | str) -> tuple[Any, Any]:
    """(causal LM on `device`, tokenizer) from any `from_pretrained` path; one load at a time in this process."""
    with PRETRAINED_LOCK:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, **pretrained_kwargs(path))
        model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **pretrained_kwargs(path))
        return model.to(device), tokenizer


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
    device = device or pick_device()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model, tokenizer = pretrained(path, dtype=dtype, device=device)  # model: a PreTrainedModel, or a PeftModel below
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not trainable:
        model.eval().requires_grad_(False)
        return model, tokenizer
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if lora is not None:
        from peft import get_peft_model

        if gradient_checkpointing:
            model.enable_input_require_grads()  # frozen embeddings would otherwise cut the checkpointed graph
        model = get_peft_model(model, lora.peft_config(model))
    model.train()
    return model, tokenizer


def check_same_vocabulary(student_tokenizer: Any, teacher_tokenizer: Any) -> None:
    """Distillation compares distributions token by token, so both sides must share one vocabulary."""
    if student_tokenizer.get_vocab() != teacher_tokenizer.get_vocab():
        raise ValueError(
            f"teacher and student tokenizers differ ({len(teacher_tokenizer)} vs {len(student_tokenizer)} tokens); they must share a vocabulary"
        )


def gather_logprobs(logits: Logits, targets: torch.Tensor, chunk_size: int = 512) -> torch.Tensor:
    """log softmax(logits)[targets] for logits (B, T, V) (or HiddenLogits), targets (B, T) -> (B, T), in fp32 chunks
    over T (checkpointed under autograd, so a chunk's logits are not kept for backward)."""
    return chunked(_taken_rows, logits, targets.unsqueeze(-1), chunk_size=chunk_size)


@torch.no_grad()
def argmax_hits(logits: Logits, targets: torch.Tensor, chunk_size: int = 512) -> torch.Tensor:
    """(B, T): whether each target was the most likely token under logits (B, T, V) (or HiddenLogits), in chunks."""
    return chunked(lambda chunk, taken: chunk.argmax(-1) == taken.squeeze(-1), logits, targets.unsqueeze(-1), chunk_size=chunk_size)


def _taken_rows(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, n, V) logits, (B, n, 1) targets -> (B, n) log-probabilities of the targets."""
    logits = logits.float()
    return logits.gather(-1, targets).squeeze(-1) - torch.logsumexp(logits, dim=-1)


def forward_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) of a right-padded batch."""
    return model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


def forward_hidden_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, frozen: bool = False) -> Logits:
    """The batch's logits as HiddenLogits (final hidden states and the lm_head) for a model whose decoder the engine
    runs, so that no (B, T, V) tensor is made; a (B, T, V) tensor for any other model. `frozen`: a teacher's."""
    if isinstance(model, AdapterDisabled):
        with model.model.disable_adapter():
            return forward_hidden_logits(model.model, input_ids, attention_mask, frozen=frozen)
    from training.decode import base_model, supports

    if not supports(model):
        return forward_logits(model, input_ids, attention_mask)
    base = base_model(model)
    hidden = base.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    return HiddenLogits(hidden, base.lm_head, frozen=frozen)


class AdapterDisabled:
    """A peft model seen with its adapter switched off: the frozen starting policy, sharing the weights."""

    def __init__(self, model: Any) -> None:
        assert hasattr(model, "disable_adapter"), "only a peft (LoRA) model has an adapter to disable"
        self.model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self.model.disable_adapter():
            return self.model(*args, **kwargs)


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *,
    chunk_size: int = 256,
    temperature: float = 1.0,
    position_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """(B, T-1): the model's log-probability of each next token input_ids[:, 1:] (module docstring: in chunks), of
    softmax(logits / temperature) where a temperature other than 1 is given (a sampler's distribution). Packed rows
    (training.data.collate_packed) pass position_ids and no attention mask."""
    return _taken(model, input_ids, attention_mask, position_ids, chunk_size, temperature)[0]


def token_logprobs_and_hits(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *,
    position_ids: torch.Tensor | None = None,
    chunk_size: int = 256,
) -> tuple[torch.Tensor, torch.Tensor]:
    """token_logprobs and, (B, T-1), whether each next token was the model's most likely one (SFT's token accuracy)."""
    return _taken(model, input_ids, attention_mask, position_ids, chunk_size, 1.0)


def _taken(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    position_ids: torch.Tensor | None,
    chunk_size: int,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(model, AdapterDisabled):
        with torch.no_grad(), model.model.disable_adapter():
            return _taken(model.model, input_ids, attention_mask, position_ids, chunk_size, temperature)
    from training.decode import base_model, supports

    if position_ids is not None:
        attention_mask = None  # transformers reads packed rows from the restarting positions (masking_utils)
    targets = input_ids[:, 1:]
    if not supports(model):
        packed = {"position_ids": position_ids} if position_ids is not None else {}  # a plain forward may not take it
        logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **packed).logits[:, :-1]
        return gather_logprobs(logits / temperature if temperature != 1.0 else logits, targets), logits.argmax(-1) == targets
    base = base_model(model)
    hidden = base.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False).last_hidden_state[
        :, :-1
    ]
    pieces, hits = [], []
    for start in range(0, hidden.shape[1], chunk_size):
        piece, taken = hidden[:, start : start + chunk_size], targets[:, start : start + chunk_size]
        if torch.is_grad_enabled() and piece.requires_grad:
            logprobs, hit = checkpoint(_chunk_logprobs, base.lm_head, piece, taken, temperature, use_reentrant=False)
        else:
            logprobs, hit = _chunk_logprobs(base.lm_head, piece, taken, temperature)
        pieces.append(logprobs)
        hits.append(hit)
    return torch.cat(pieces, dim=1), torch.cat(hits, dim=1)


def logprobs_and_entropy(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, chunk_size: int = 256
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(B, T-1) log-probabilities of the next tokens and (B, T-1) entropies of the next-token distribution, from the
    final hidden states a chunk of positions at a time (checkpointed per chunk under autograd: no B x T x V logits
    are kept for backward). None for a model the chunked path does not run (the caller takes full logits)."""
    from training.decode import base_model, supports

    if not supports(model):
        return None
    base = base_model(model)
    hidden = base.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state[:, :-1]
    targets = input_ids[:, 1:]
    logps, entropies = [], []
    for start in range(0, hidden.shape[1], chunk_size):
        piece, taken = hidden[:, start : start + chunk_size], targets[:, start : start + chunk_size]
        if torch.is_grad_enabled() and piece.requires_grad:
            logp, entropy = checkpoint(_chunk_logprobs_entropy, base.lm_head, piece, taken, use_reentrant=False)
        else:
            logp, entropy = _chunk_logprobs_entropy(base.lm_head, piece, taken)
        logps.append(logp)
        entropies.append(entropy)
    return torch.cat(logps, dim=1), torch.cat(entropies, dim=1)


def _chunk_logprobs_entropy(head: Any, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits = head(hidden).float()
    norm = torch.logsumexp(logits, dim=-1)
    entropy = norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - norm, entropy


def _chunk_logprobs(head: Any, hidden: torch.Tensor, targets: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunk's taken-token log-probabilities, and whether each taken token was the most likely (from the same logits)."""
    logits = head(hidden).float()
    logits = logits / temperature if temperature != 1.0 else logits
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, dim=-1), logits.argmax(-1) == targets


def trainable_parameters(model: Any) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]
