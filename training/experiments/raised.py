"""RAISED against adversarial SFT and no defence, on the service desk's attack axis (issue 18, part C).

    python -m training.experiments raised --smoke
    python -m training.experiments raised --base PATH          # a service-desk SFT checkpoint; no teacher needed

Why the service desk and not StoreBench: a service-desk call is 7-25 short steps (1-2k tokens with the compact tool
listing), an anchor plays it in ~40 ms, and its attack report is judged on the database; a StoreBench run is a
multi-week business simulation whose prompts run to thousands of tokens per turn, too long for CPU training and for
the pairs' two forward passes per step. Every arm starts from the same checkpoint and is evaluated the same way:
`evaluate_attacks` (training/raised/evaluate.py) as the experiment's measures: greedy play of the test seeds on
the held-out templates (servicedesk/eval), unattacked and under each style with guidance on, plus output drift from
the start model; the table's reward and pass rate are the unattacked calls played by the sampler.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

EXPERIMENT = register(
    Experiment(
        name="raised",
        question=(
            "Does distilling the clean-context model into the injected context lower the attack success rate while keeping "
            "benign utility, guidance compliance and the model's benign outputs, compared with adversarial SFT and no defence?"
        ),
        method="raised",
        arms=(
            Arm(
                "raised",
                "raised",
                {"variant": "raised"},
                "KL to the frozen start model given the clean context, on clean and injected variants",
            ),
            Arm("advsft", "raised", {"variant": "advsft"}, "cross-entropy on the anchor's actions in injected contexts"),
            Arm("none", "none", {}, "no defence: the start checkpoint"),
        ),
        shared={
            "task_set": "servicedesk/train",
            "eval_task_set": "servicedesk/eval",
            "anchor": "oracle",
            "guidance_share": 0.5,
            "pairs_per_step": 4,
            "max_steps": 16,  # sized to this session's CPU (2 shared cores); a few minutes per run
            "lr_schedule": "cosine",
            "warmup_steps": 2,
            "train_seeds": 1000,
            "teacher_weights": "frozen",
            "clean_coef": 1.0,
            "max_tokens": 2048,
            "eval_seed_start": 100_000,
            "eval_episodes": 0,  # the recipe's own evaluation is off: the runner measures every checkpoint (measures below)
            "eval_max_turns": 12,
            "max_new_tokens": 96,
        },
        evaluation=Evaluation(
            task="servicedesk/eval",
            dev_seeds=(100_000, 100_012),
            test_seeds=(200_000, 200_012),
            max_turns=12,
            max_new_tokens=96,
            components=True,
        ),
        tuning={"learning_rate": (1e-4,)},  # one point, the same for every arm
        measures="training.experiments.raised:experiment_measures",
        train_seeds=(0, 1, 2),
        smoke={
            "max_steps": 2,
            "pairs_per_step": 2,
            "train_seeds": 50,
            "lr_schedule": "constant",
            "warmup_steps": 0,
            "max_tokens": 2048,
            "eval_episodes": 1,
            "eval_max_turns": 2,
            "max_new_tokens": 8,
        },
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={
                "pairs_per_step": 4,
                "grad_accum": 2,
                "gradient_checkpointing": True,
                "max_tokens": 4096,
                "eval_episodes": 1,
                "eval_max_turns": 4,
                "max_new_tokens": 64,
            },
            steps=3,
        ),
    )
)


def experiment_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """The raised experiment's extra measures (training.experiments.Experiment.measures): `evaluate_attacks` of the
    checkpoint on the test `seeds`, in the base's prompt style, with drift measured against the base."""
    from training import make_config
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.modeling import load_model
    from training.raised.evaluate import evaluate_attacks
    from training.recipes.raised import RaisedConfig

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(RaisedConfig)}
    config = make_config(
        "raised",
        {
            **{k: v for k, v in values.items() if k in known},
            "model": base,
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
        },
    )
    model, tokenizer = load_checkpoint(checkpoint, base)  # a LoRA run's adapter over the base, too
    reference = model if checkpoint == base else load_model(base, trainable=False)[0]
    return evaluate_attacks(model, tokenizer, config, seeds, reference=reference)
