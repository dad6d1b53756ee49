"""Does training only each rollout's structurally important, high-divergence steps beat full on-policy distillation?

Five arms of training/recipes/graphopd.py from one base and one teacher, differing only in the loss mask:
graphopd (credit x divergence), divergence only, graph credit only, a random subset of the same size, and all
steps (plain OPD at the same compute).
"""

from __future__ import annotations

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

GRAPHOPD = register(
    Experiment(
        name="graphopd",
        question="Does distilling only each rollout's top steps by graph credit and teacher divergence beat distilling every step?",
        method="graphopd",
        arms=(
            Arm("graphopd", "graphopd", {"selection": "graphopd"}, "top steps by rank-fused graph credit and divergence"),
            Arm("divergence", "graphopd", {"selection": "divergence"}, "top steps by teacher-student divergence"),
            Arm("graph", "graphopd", {"selection": "graph"}, "top steps by graph credit"),
            Arm("random", "graphopd", {"selection": "random"}, "the same number of steps, at random"),
            Arm("opd", "graphopd", {"selection": "all"}, "every step (plain OPD, same compute)"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 6,  # sized to this session's CPU: 15-20 runs in ~20 minutes on 2 shared cores
            "tasks_per_step": 4,
            "group_size": 2,
            "temperature": 1.0,
            "keep_fraction": 0.5,
            "fusion": "rank",
            "max_turns": 4,
            "max_new_tokens": 48,
            "train_seed_start": 0,
            "train_seeds": 1000,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        tuning={"learning_rate": (2e-4,)},  # one point: the same (no) tuning budget for every arm
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 16, "max_turns": 3, "eval_episodes": 4},
        needs_teacher=True,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # full fine-tuning in bf16: 1.7B params x (2 weights + 2 grads + 8 AdamW fp32 states) ~ 20 GB, the
            # teacher 3.4 GB, activations of 64 rollouts x ~1k tokens with 151k-vocab logits in chunks: fits 141 GB.
            overrides={"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
