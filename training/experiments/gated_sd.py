"""Does adding analyzer-gated self-distillation to GRPO beat GRPO alone, at the same compute?

Two arms of training/recipes/gated_sd.py from one base, differing only in `sd_coef`: joint (GRPO + the reverse
KL to the same network shown the analyzer's guidance for each step, gated by the step's value) and grpo
(sd_coef = 0: the same rollouts, the same guided-teacher forward, its KL logged but not trained on). The
analyzer is toolgym's (environments/toolgym/analyzer.py); no external teacher is read.
"""

from __future__ import annotations

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

GATED_SD = register(
    Experiment(
        name="gated_sd",
        question="Does GRPO plus self-distillation toward the analyzer-guided self, gated by the analyzer's step value, beat GRPO alone?",
        method="joint",
        arms=(
            Arm("joint", "gated_sd", {"sd_coef": 0.5}, "GRPO + 0.5 x reverse KL to the guided self on steps valued below 0.5"),
            Arm("grpo", "gated_sd", {"sd_coef": 0.0}, "GRPO alone (sd_coef = 0: same rollouts and teacher forward)"),
            Arm("none", "none", {}, "no training: the start checkpoint"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,
            "gate": "threshold",
            "gate_threshold": 0.5,
            "teacher_weights": "live",
            "loss": "full",
            "max_turns": 4,
            "max_new_tokens": 48,
            "train_seed_start": 0,
            "train_seeds": 1000,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        tuning={"learning_rate": (2e-5, 2e-4)},  # the same two points for every arm, chosen on dev seeds
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 24, "max_turns": 3, "eval_episodes": 4},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # full fine-tuning in bf16 ~ 20 GB with AdamW; the guided teacher is the live model (no copy). Per
            # micro-batch of 16 episodes (~1k tokens) the aligned teacher logits are 16 x 1k x 151936 bf16 ~ 5 GB,
            # four micro-batches held until the update ~ 20 GB, teacher rows forwarded 16 at a time: fits 141 GB.
            overrides={"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
