"""TJPO: does rewarding successful trajectories that differ from their group beat GRPO, and GRPO with an entropy bonus?

    python -m training.experiments tjpo --smoke
    python -m training.experiments tjpo --base PATH          # no teacher needed

Four arms of training/recipes/grpo.py from one base on toolgym/chain, differing only in two coefficients and the
behaviour representation: tjpo (diversity_coef > 0: a passed rollout's advantage gains its mean distance to its
group in the policy's own, learnt representation: the mean of its final hidden states over the agent's tokens, as
the paper learns its representation), tjpo_fixed (the same bonus in the lab's earlier fixed descriptors,
training/descriptors.py: the ablation), grpo (both 0) and grpo_entropy (entropy_coef > 0: the usual exploration
bonus). The measures below keep the fixed descriptors for every arm, so the arms' diversity is read on one scale. Beside
the greedy reward and pass rate, `measures` samples k = 4 episodes per test seed at temperature 1.0 and reports
unbiased pass@1 and pass@4 and the mean descriptor diversity of each seed's k samples (all of them, and the passed
ones among seeds with at least two passes): whether a method keeps several ways to succeed or collapses onto one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from environments.records import Record, record_score
from training.descriptors import describe, group_diversity, pass_at_k
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

SAMPLES_PER_SEED = 4
MEASURE_TEMPERATURE = 1.0
MEASURE_BATCH_SEEDS = 16  # seeds whose k samples share one batched generate (64 episodes): bounds the padding


def sample_measures(
    model: Any, tokenizer: Any, config: Any, seeds: list[int], *, k: int = SAMPLES_PER_SEED, seed: int = 0
) -> dict[str, float]:
    """k episodes per seed at temperature 1.0 with `config`'s task, turn and token limits and prompt style:
    pass@1, pass@k, sample_diversity (mean over seeds of the k samples' pairwise descriptor distance) and
    success_diversity (the same over the passed samples, on the seeds with >= 2 passes; 0 when there is none)."""
    import torch

    from training.sampling import rollout_episodes

    torch.manual_seed(seed)  # the same sampling stream for every checkpoint measured
    records: list[Record] = []
    for start in range(0, len(seeds), MEASURE_BATCH_SEEDS):
        jobs = [(config.task, s) for s in seeds[start : start + MEASURE_BATCH_SEEDS] for _ in range(k)]
        with torch.no_grad():
            records += rollout_episodes(
                model,
                tokenizer,
                jobs,
                max_turns=config.max_turns,
                max_new_tokens=config.max_new_tokens,
                temperature=MEASURE_TEMPERATURE,
                style=config.prompt_style,
                max_prompt_tokens=config.max_prompt_tokens,
            )
    at_1, at_k, diversity, success = [], [], [], []
    for i in range(len(seeds)):
        group = records[i * k : (i + 1) * k]
        passed = [bool(record_score(r)["passed"]) for r in group]
        at_1.append(pass_at_k(k, sum(passed), 1))
        at_k.append(pass_at_k(k, sum(passed), k))
        diversity.append(group_diversity([describe(r) for r in group]))
        if sum(passed) >= 2:
            success.append(group_diversity([describe(r) for r, p in zip(group, passed, strict=True) if p]))
    n = max(len(seeds), 1)
    return {
        "pass@1": sum(at_1) / n,
        f"pass@{k}": sum(at_k) / n,
        "sample_diversity": sum(diversity) / n,
        "success_diversity": sum(success) / len(success) if success else 0.0,
    }


def measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: `sample_measures` of the trained checkpoint on the test seeds, in the base's prompt style."""
    from training import make_config
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.recipes.grpo import GRPOConfig

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    config = make_config(
        "grpo",
        {
            **{k: v for k, v in values.items() if k in known},
            "model": base,
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
        },
    )
    model, tokenizer = load_checkpoint(checkpoint, base)
    return sample_measures(model, tokenizer, config, seeds)


TJPO = register(
    Experiment(
        name="tjpo",
        question=(
            "Does adding a group-relative trajectory-diversity bonus for successful rollouts to GRPO's advantage beat GRPO "
            "and GRPO with an entropy bonus on success, pass@k and the diversity of what the policy does?"
        ),
        method="tjpo",
        arms=(
            Arm(
                "tjpo",
                "grpo",
                {"diversity_coef": 0.5, "diversity_representation": "policy"},
                "GRPO + 0.5 x a passed rollout's mean distance to its group in the policy's own hidden-state representation",
            ),
            Arm(
                "tjpo_fixed",
                "grpo",
                {"diversity_coef": 0.5, "diversity_representation": "descriptors"},
                "the same bonus in fixed descriptors (tools, sub-goals, sources, reasoning length)",
            ),
            Arm("grpo", "grpo", {}, "GRPO alone"),
            Arm("grpo_entropy", "grpo", {"entropy_coef": 0.01}, "GRPO + 0.01 x next-token entropy on agent tokens"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,
            "max_turns": 4,
            "max_new_tokens": 48,
            "train_seed_start": 0,
            "train_seeds": 1000,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        # the same two points for every arm, chosen on dev seeds (2e-4 alone pulled on-policy arms below the start)
        tuning={"learning_rate": (2e-5, 2e-4)},
        measures="training.experiments.tjpo:measures",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 24, "max_turns": 3, "eval_episodes": 4},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # full fine-tuning in bf16 ~ 20 GB with AdamW; the entropy arm's fp32 softmax is chunked over T (losses.py)
            overrides={"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
