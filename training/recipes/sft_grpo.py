"""SFT, then GRPO from the SFT checkpoint: the two existing recipes composed, as one run (the options desk's SOTA).

    python -m training sft_grpo --set model="'PATH'" --set data="'demos.jsonl'" --set sft_steps=20 --set max_steps=30

Stage 1 is training/recipes/sft.py on `data` for `sft_steps` steps (its own learning rate and batch), written to
`output_dir/sft/` (`output_dir` itself when rl=False); stage 2 is training/recipes/grpo.py for `max_steps` steps on `task`, starting from stage 1's final
checkpoint and written to `output_dir` itself, so the run's folder, metrics.jsonl and final checkpoint are GRPO's
as for any on-policy run (stage 1's metrics are in `sft/metrics.jsonl`). `rl=False` stops after stage 1: the
SFT-only baseline at the same SFT compute. Nothing is reimplemented: each stage is the recipe's own `run`.
A LoRA run (lora_r > 0) is refused: stage 2 would need stage 1's adapter merged first, which no recipe does yet.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from training.engine import Hooks, RunResult
from training.recipes import grpo, sft
from training.recipes.grpo import GRPOConfig
from training.recipes.sft import SFTConfig


@dataclass
class SFTGRPOConfig(GRPOConfig):
    data: str = ""
    """JSONL of canonical trajectory records for stage 1 (the demonstrations)."""
    sft_steps: int = 20
    """Optimizer steps of stage 1 (SFT)."""
    sft_learning_rate: float = 1e-3
    """Learning rate of stage 1 (stage 2 uses `learning_rate`)."""
    sft_batch_size: int = 8
    """Episodes per stage-1 micro-batch."""
    sft_max_tokens: int = 4096
    """Stage-1 episodes longer than this are truncated (masks cut alike)."""
    rl: bool = True
    """False: stop after stage 1 (the SFT-only baseline); max_steps and the rollout fields are then unused."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.data:
            out.append("data='': give a JSONL file of demonstration records for stage 1")
        if self.sft_steps < 1:
            out.append(f"sft_steps={self.sft_steps!r}: must be at least 1 (plain GRPO is the grpo recipe)")
        if not self.sft_learning_rate > 0:
            out.append(f"sft_learning_rate={self.sft_learning_rate!r}: must be positive")
        if self.sft_batch_size < 1:
            out.append(f"sft_batch_size={self.sft_batch_size!r}: must be at least 1")
        if self.sft_max_tokens < 2:
            out.append(f"sft_max_tokens={self.sft_max_tokens!r}: must be at least 2")
        if self.lora_r > 0:
            out.append(f"lora_r={self.lora_r!r}: stage 2 cannot start from a LoRA adapter yet; train stage 1 in full (lora_r=0)")
        return out


def stage_configs(config: SFTGRPOConfig) -> tuple[SFTConfig, GRPOConfig]:
    """Stage 1's SFT config and stage 2's GRPO config (its `model` is filled in once stage 1 has a checkpoint)."""
    shared = {f.name: getattr(config, f.name) for f in dataclasses.fields(GRPOConfig)}
    first = SFTConfig(
        model=config.model,
        data=config.data,
        output_dir=str(Path(config.output_dir) / "sft") if config.rl else config.output_dir,
        max_steps=config.sft_steps,
        learning_rate=config.sft_learning_rate,
        batch_size=config.sft_batch_size,
        max_tokens=config.sft_max_tokens,
        seed=config.seed,
        device=config.device,
        grad_accum=config.grad_accum,
        max_grad_norm=config.max_grad_norm,
        gradient_checkpointing=config.gradient_checkpointing,
        compact_tools=config.compact_tools,
        max_result_chars=config.max_result_chars,
        save_every=0,
    )
    return first, GRPOConfig(**shared)


def run(config: SFTGRPOConfig, hooks: Hooks | None = None) -> RunResult:
    first, second = stage_configs(config)
    done = sft.run(first, hooks)
    assert done.final_checkpoint, f"stage 1 (SFT) saved no checkpoint under {first.output_dir}"
    if not config.rl or done.stopped:
        return RunResult("sft_grpo", done.steps, done.checkpoints, done.last_metrics, done.stopped)
    second.model = done.final_checkpoint
    result = grpo.run(second, hooks)
    return RunResult("sft_grpo", done.steps + result.steps, done.checkpoints + result.checkpoints, result.last_metrics, result.stopped)
