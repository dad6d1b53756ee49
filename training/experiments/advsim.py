"""AdvSim2Real: co-evolution against adversarial training on fixed injections and no defence, in two worlds.

    python -m training.experiments advsim --smoke                     # the service desk; every arm on the tiny models
    python -m training.experiments advsim --base desk-small           # the full comparison -> training/README.md
    python -m training.experiments advsim-storebench --smoke          # StoreBench's short family, the same arms
    python -m training.experiments advsim-storebench --base base-small

The world is a value (`advsim_experiment`'s task sets): `advsim` trains on the service desk (simulator: the rule-based
caller; real: a model caller), `advsim-storebench` on StoreBench's short family (simulator: the frozen engine 1.0.0
with planted content; real: engine 2.0.0's intraday clock; environments/storebench/short.py).

Arms (same start checkpoint, same rounds, rollouts and tuning grid):
    coevo   the three roles co-evolve in the simulator (learned adversary, learned curriculum, GRPO agent)
    fixed   adversarial training on fixed injections: the same GRPO loop with both proposers frozen at uniform (the
            templated components drawn at random, tasks drawn at random)
    none    no defence: the start checkpoint
Measures (mean ± 95% CI over training seeds, on the test seeds of the held-out templates, greedy): in the simulator
(rule-based caller) and the real world (a model caller), completion clean, under the attack axis' own styles (the
unseen adversary: never planted in training), under an adversary trained separately against each checkpoint
(`fresh`), and for the trained arms under their co-trained adversary; benign utility, guidance compliance and the
sim-to-real gaps. Under the table: the relative gain in real-world completion under the unseen adversary,
(arm - none) / none, per trained arm.

Where the service desk's real caller comes from: `real_user_model` ("": the base itself plays the caller). StoreBench
runs on the short family: a full scenario is weeks of simulated days, too long for CPU co-evolution
(training/README.md, "AdvSim2Real").
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register
from training.experiments.storebench_loop import MAX_NEW_TOKENS as STORE_MAX_NEW_TOKENS

GAIN_MEASURES = ("real_completion_unseen", "real_completion_fresh", "sim_completion_unseen")


def experiment_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """The checkpoint in both worlds on the test `seeds` (training/advsim/evaluate.py), after training an adversary
    against it for `final_adversary_rounds` rounds; with its co-trained adversary when it has one (not `none`)."""
    from training import make_config
    from training.advsim.roles import CategoricalRole
    from training.advsim.worlds import ModelPlayer
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.recipes.advsim import AdvSimConfig, evaluate_checkpoint, evaluation_adversaries, new_roles, worlds_for

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(AdvSimConfig)}
    config = make_config(
        "advsim",
        {
            **{k: v for k, v in values.items() if k in known},
            "model": base,
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
        },
    )
    assert isinstance(config, AdvSimConfig)
    model, tokenizer = load_checkpoint(checkpoint, base)
    player = ModelPlayer(model, tokenizer, config)
    worlds = worlds_for(config, str(next(model.parameters()).device))
    state_file = Path(checkpoint) / "trainer_state.json"
    saved = json.loads(state_file.read_text()).get("recipe_state", {}).get("advsim") if state_file.exists() else None
    coadv = CategoricalRole.from_state(saved["adversary"]) if saved else None
    curriculum = CategoricalRole.from_state(saved["curriculum"]) if saved else new_roles(config)[1]
    adversaries, _ = evaluation_adversaries(player, config, worlds[0], curriculum, coadv)
    figures, _ = evaluate_checkpoint(player, config, worlds, adversaries, seeds=seeds)
    return figures


def relative_gains(experiment: Any, result: Any) -> str:
    """(arm - none) / none of the mean over training seeds, for each GAIN_MEASURES, per trained arm (the report hook)."""
    arms = result.arms
    if "none" not in arms:
        return ""

    def mean(arm: Any, measure: str) -> float | None:
        values = [m[measure] for m in arm.measures.values() if measure in m]
        return statistics.fmean(values) if values else None

    lines = ["| relative gain over none | " + " | ".join(GAIN_MEASURES) + " |", "| --- |" + " --- |" * len(GAIN_MEASURES)]
    for name, arm in arms.items():
        if name == "none":
            continue
        cells = []
        for measure in GAIN_MEASURES:
            ours, baseline = mean(arm, measure), mean(arms["none"], measure)
            cells.append("-" if ours is None or not baseline else f"{100 * (ours - baseline) / baseline:+.1f}%")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


ARMS = (
    Arm(
        "coevo",
        "advsim",
        {"adversary": "learned", "curriculum": "learned"},
        "co-evolution: flip-rewarded adversary, 50%-curriculum, GRPO agent",
    ),
    Arm(
        "fixed",
        "advsim",
        {"adversary": "fixed", "curriculum": "uniform"},
        "GRPO on fixed injections (uniform templated components, uniform tasks)",
    ),
    Arm("none", "none", {}, "no defence: the start checkpoint"),
)
QUESTION = (
    "Does co-evolving an injection adversary and a task curriculum with the agent in a simulator raise completion under an "
    "adversary never seen in training, in the real world, compared with adversarial training on fixed injections and no "
    "defence{where}?"
)


def advsim_experiment(
    name: str,
    *,
    task_set: str,
    eval_task_set: str,
    where: str,
    shared: dict[str, Any],
    evaluation: Evaluation,
    smoke: dict[str, Any],
    gpu: GpuConfig,
) -> Experiment:
    """The comparison in one world: the arms train on `task_set`, the recipe and the measures evaluate on `eval_task_set`
    (the runner's own evaluation plays `evaluation.task`, the same held-out set)."""
    assert evaluation.task == eval_task_set, f"{name}: the table's evaluation ({evaluation.task}) is not {eval_task_set}"
    return Experiment(
        name=name,
        question=QUESTION.format(where=where),
        method="coevo",
        arms=ARMS,
        shared={"task": task_set, "eval_task_set": eval_task_set, **shared},
        evaluation=evaluation,
        tuning={"learning_rate": (1e-5,)},  # one point, the same for every arm
        measures="training.experiments.advsim:experiment_measures",
        report="training.experiments.advsim:relative_gains",
        train_seeds=(0, 1, 2),
        smoke=smoke,
        needs_teacher=False,
        gpu=gpu,
    )


EXPERIMENT = register(
    advsim_experiment(
        "advsim",
        task_set="servicedesk/train",
        eval_task_set="servicedesk/eval",
        where="",
        shared={
            "schedule": "joint",
            "max_steps": 4,  # rounds; sized from the CPU timing in training/README.md (AdvSim2Real) to ~60 min on one core
            "tasks_per_step": 2,
            "group_size": 2,
            "max_turns": 10,
            "max_new_tokens": 96,
            "max_prompt_tokens": 2048,
            "temperature": 1.0,
            "train_seeds": 1000,
            "eval_seed_start": 100_000,
            "eval_episodes": 0,  # the recipe's own evaluation is off: the runner measures every final checkpoint (measures)
            "save_every": 4,
            "final_adversary_rounds": 1,
            "real_user_max_new_tokens": 32,
        },
        evaluation=Evaluation(
            task="servicedesk/eval",
            dev_seeds=(100_000, 100_003),
            test_seeds=(200_000, 200_003),
            max_turns=10,
            max_new_tokens=96,
            components=True,
        ),
        smoke={
            "max_steps": 1,
            "tasks_per_step": 2,
            "group_size": 2,
            "max_turns": 2,
            "max_new_tokens": 8,
            "train_seeds": 50,
            "save_every": 1,
            "final_adversary_rounds": 1,
            "real_user_max_new_tokens": 4,
            "unseen_styles": ["direct"],
        },
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={
                "tasks_per_step": 2,
                "group_size": 2,
                "max_turns": 4,
                "max_new_tokens": 64,
                "gradient_checkpointing": True,
                "final_adversary_rounds": 1,
            },
            steps=2,
        ),
    )
)

# StoreBench's short family: 2-3 day stores (an anchor passes in 10-40 calls). base-small reads a compact tool listing
# and results cut to 400 characters (its zoo prompt style; the same fields for a base without one), as storebench-loop.
STORE_TURNS = 12  # agent turns: a 3-day store needs three end_window calls among them
STOREBENCH = register(
    advsim_experiment(
        "advsim-storebench",
        task_set="storebench-short/train",
        eval_task_set="storebench-short/eval",
        where=" on StoreBench (simulator: the frozen engine 1.0.0; real: engine 2.0.0's clock)",
        shared={
            "schedule": "joint",
            "max_steps": 4,  # rounds; sized from the CPU timing in training/README.md (AdvSim2Real, StoreBench)
            "tasks_per_step": 2,
            "group_size": 2,
            "max_turns": STORE_TURNS,
            "max_new_tokens": STORE_MAX_NEW_TOKENS,
            "max_prompt_tokens": 4096,
            "compact_tools": True,
            "max_result_chars": 400,
            "temperature": 1.0,
            "train_seeds": 1000,
            "eval_seed_start": 100_000,
            "eval_episodes": 0,
            "save_every": 4,
            "final_adversary_rounds": 1,
            "unseen_styles": ["direct", "quoted"],  # two of the four stock styles: the evaluation's cost is per condition
        },
        evaluation=Evaluation(
            task="storebench-short/eval",
            dev_seeds=(100_000, 100_003),
            test_seeds=(200_000, 200_004),
            max_turns=STORE_TURNS,
            max_new_tokens=STORE_MAX_NEW_TOKENS,
            components=True,
        ),
        smoke={
            "max_steps": 1,
            "tasks_per_step": 1,
            "group_size": 2,
            "max_turns": 1,  # one turn of a ~1k-token StoreBench prompt: the smoke's cost is the tiny model's prefill
            "max_new_tokens": 8,
            "max_prompt_tokens": 2048,
            "eval_episodes": 1,  # the runner's test seeds (the recipe's own evaluation stays off)
            "train_seeds": 50,
            "save_every": 1,
            "final_adversary_rounds": 1,
            "unseen_styles": ["direct"],
        },
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={
                "tasks_per_step": 2,
                "group_size": 2,
                # The scripted anchors finish no store at 12 turns and are still cut at 40 (real completion 0.42); at 60
                # they finish (0.82 sim / 0.91 real): python -m training.advsim.anchors, training/README.md.
                "max_turns": 60,
                "max_new_tokens": 128,
                "max_prompt_tokens": 32_768,  # 60 turns of up to 128 tokens and a 400-character result each
                "gradient_checkpointing": True,
                "final_adversary_rounds": 1,
                "unseen_styles": [],
            },
            steps=2,
        ),
    )
)
