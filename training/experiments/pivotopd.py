"""PivotOPD against plain OPD and its own halves on toolgym/chain (issue 17).

    python -m training.experiments pivotopd --smoke
    python -m training.experiments pivotopd --base PATH --teacher PATH

The question: does teaching the student only where failed episodes were lost (prevention: the gold action at the
pivotal step, the expert anchor's move there, by cross-entropy after the student's own prefix, as the paper does)
and how to recover from there (recovery, forward KL on the teacher's next turns) beat on-policy distillation over
every token of every episode, at the same number of optimizer steps and rollouts? The two
halves alone are the ablations. toolgym/chain needs three dependent calls within five, so a pivot can leave the
episode running (two wasted calls leave no room) and recovery has turns to learn from.

Sizing (measured on the 2 shared CPU cores, training/README.md "PivotOPD"): one run of 20 steps of 8 tasks × 2
rollouts takes ~80 s with the tiny 64-wide model (20 runs ≈ 26-30 minutes), but ~3.5 minutes with a 3.8M-parameter
model; with a ~5M base, 25 minutes for the 20 runs means max_steps ≈ 8.
"""

from __future__ import annotations

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

# PivotOPD's own fields (the opd arm has none of them): the expert anchor (toolgym's default) finds the pivots.
PIVOT = {"pivot_finder": "anchor", "recovery_turns": 2, "max_pivots": 8, "pivot_seeds": [0]}

EXPERIMENT = register(
    Experiment(
        name="pivotopd",
        question="Does distilling the teacher at the pivotal step of failed episodes and on the recovery after it beat "
        "on-policy distillation on every token, at equal steps and rollouts?",
        method="pivotopd",
        arms=(
            Arm(
                "pivotopd",
                "pivotopd",
                {**PIVOT, "mode": "both"},
                "cross-entropy on the gold action at the pivot + forward KL on the teacher's next 2 turns",
            ),
            Arm("opd", "opd", {}, "on-policy distillation: reverse KL on every agent token of every episode"),
            Arm("prevention", "pivotopd", {**PIVOT, "mode": "prevention"}, "PivotOPD without recovery: the gold action at the pivot only"),
            Arm("recovery", "pivotopd", {**PIVOT, "mode": "recovery"}, "PivotOPD without prevention: the teacher's recovery only"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 6,  # sized to this session's CPU: 15-20 runs in ~20 minutes on 2 shared cores
            "tasks_per_step": 4,
            "group_size": 2,
            "max_turns": 5,
            "max_new_tokens": 32,
            "temperature": 0.7,
            "train_seed_start": 0,
            "train_seeds": 1000,
            "eval_seed_start": 50_000,
            "eval_episodes": 8,  # the in-run check at the start and the end; the runner evaluates dev and test seeds
            "eval_every": 0,
            "loss": "sampled",
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=5, max_new_tokens=32
        ),
        tuning={"learning_rate": (2e-4,)},  # one point: the same (no) tuning budget for every arm
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 16, "eval_episodes": 2},
        needs_teacher=True,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # full fine-tuning in bf16 (~20 GB with AdamW states) + the teacher (3.4 GB); the teacher's recovery turns
            # and logits over 151k tokens (top-k 64 with a tail for the full-vocabulary losses) fit one H200.
            overrides={
                "tasks_per_step": 16,
                "group_size": 4,
                "max_new_tokens": 128,
                "max_prompt_tokens": 2048,
                "grad_accum": 4,
                "gradient_checkpointing": True,
                "loss": "full",
                "top_k": 64,
            },
            steps=3,
        ),
    )
)
