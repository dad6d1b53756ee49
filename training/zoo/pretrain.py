"""Causal-LM pretraining on packed text windows, in the shared engine (checkpoints, exact resume, metrics.jsonl).

    config = PretrainConfig(model=init_folder, tokens="tokens.pt", seq_len=512, batch_size=8, max_steps=600, ...)
    result = run(config, hooks)          # resume: the same config with resume_from=<a step-NNNNNN folder>

The corpus is one flat token stream (documents joined by the end-of-turn token) cut into non-overlapping
windows of `seq_len`; step k trains on the windows `batch_indices(n_windows, batch_size, seed, k)` picks, a
pure function of (seed, step), so a resumed run sees exactly the batches the straight run would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from training.config import TrainConfig
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.losses import sft_loss
from training.modeling import forward_logits


@dataclass
class PretrainConfig(TrainConfig):
    tokens: str = ""
    """A torch file holding the corpus as one 1-D LongTensor of token ids."""
    seq_len: int = 512
    """Tokens per packed window."""
    batch_size: int = 8
    """Windows per micro-batch."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.tokens:
            out.append("tokens='': give the corpus token file")
        if self.seq_len < 2:
            out.append(f"seq_len={self.seq_len!r}: must be at least 2")
        if self.batch_size < 1:
            out.append(f"batch_size={self.batch_size!r}: must be at least 1")
        return out


def windows(tokens: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(N, seq_len) non-overlapping windows of the stream; the tail shorter than a window is dropped."""
    count = len(tokens) // seq_len
    assert count > 0, f"the corpus has {len(tokens)} tokens, fewer than one window of {seq_len}"
    return tokens[: count * seq_len].view(count, seq_len)


def lm_loss(model: Any, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
    """Next-token cross-entropy over every position of the (B, T) windows."""
    ones = torch.ones_like(batch)
    logits = forward_logits(model, batch, ones)  # (B, T, V)
    weights = ones[:, 1:].float()
    return sft_loss(logits[:, :-1], batch[:, 1:], weights, weights)


def run(config: PretrainConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="pretrain", hooks=hooks)
    data = windows(torch.load(config.tokens, weights_only=True), config.seq_len)  # (N, T)

    def loss_fn(rows: list[int]) -> tuple[torch.Tensor, dict[str, float]]:
        return lm_loss(trainer.model, data[rows].to(trainer.device))

    while trainer.step < config.max_steps and not trainer.stopping():
        micro = [
            batch_indices(len(data), config.batch_size, config.seed, trainer.step * config.grad_accum + k) for k in range(config.grad_accum)
        ]
        metrics = trainer.optimize(micro, loss_fn)
        metrics["tokens_seen"] = float(trainer.step * config.grad_accum * config.batch_size * config.seq_len)
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
