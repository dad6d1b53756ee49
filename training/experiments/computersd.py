"""ComputerSD on the desktop (issue 45): online self-distillation toward the analyser-guided self, gated by the
analyser's step value, jointly with trajectory-level GRPO; against GRPO alone and ungated self-distillation.

    python -m training.experiments computersd --smoke
    python -m training.experiments computersd --base smol-base --no-readme     # the full comparison (a bf16 machine)

Every arm is training/recipes/gated_sd.py from the same base on desktop/train (move-files, reply-mail,
change-setting) with the same rollouts and the same guided-teacher forward, so the compute is equal. After each
executed action the desktop's analyser (environments/desktop/analyser.py) writes one sentence of guidance and a
step value in [0, 1]. The analyser is scripted (rules read from the record: failed calls, stale ids, ad clicks,
undone progress, loops; see the README's Analyser section), not a model: the paper's analyser is an LLM.
The guidance is the teacher's privileged context (its system prompt only); the value gates the token-level term.

Arms:
- grpo: sd_coef = 0 (GRPO alone; the guided teacher still runs and its KL is logged, not trained on).
- sd-ungated: GRPO + 0.5 x reverse KL to the guided self on every step (gate none: the value is ignored).
- computersd: GRPO + 0.5 x the same KL on the steps the analyser valued below 0.5 (gate threshold).

Evaluation: desktop/test (buy-cheapest, errand: tasks never trained on) on seeds 1000-1023, no drift (the table;
success, steps per task and shell share beside it), and the same seeds with drift high (hybridcua's drift_measures).
"""

from __future__ import annotations

from training.experiments import QWEN3_1_7B, Arm, Experiment, GpuConfig, register
from training.experiments.hybridcua import HELD_OUT, LIMITS, SMOKE, SMOKE_RL

COMPUTERSD = register(
    Experiment(
        name="computersd",
        question="Does GRPO plus self-distillation toward the analyser-guided self, gated by the analyser's step value, beat GRPO "
        "alone and ungated self-distillation on held-out desktop tasks, without and with drift?",
        method="computersd",
        arms=(
            Arm("grpo", "gated_sd", {"sd_coef": 0.0, "gate": "none"}, "GRPO alone (sd_coef = 0: same rollouts and teacher forward)"),
            Arm("sd-ungated", "gated_sd", {"sd_coef": 0.5, "gate": "none"}, "GRPO + 0.5 x reverse KL to the guided self on every step"),
            Arm(
                "computersd",
                "gated_sd",
                {"sd_coef": 0.5, "gate": "threshold", "gate_threshold": 0.5},
                "GRPO + 0.5 x the KL on steps the analyser valued below 0.5",
            ),
        ),
        shared={
            "task": "desktop/train",
            "max_steps": 30,
            "tasks_per_step": 4,
            "group_size": 4,
            "learning_rate": 1e-5,
            "temperature": 1.0,
            "teacher_weights": "live",
            "loss": "full",
            **LIMITS,
            "train_seed_start": 0,
            "train_seeds": 1000,
            "eval_seed_start": 3000,
            "eval_episodes": 8,
            "eval_every": 0,
        },
        evaluation=HELD_OUT,
        measures="training.experiments.hybridcua:drift_measures",
        train_seeds=(0, 1, 2),
        smoke={**SMOKE_RL, **SMOKE},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={"tasks_per_step": 8, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
        ),
    )
)
