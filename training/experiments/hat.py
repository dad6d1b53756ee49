"""HAT against SFT on one harness level's data: does annealing the harness away teach a model to do without it?

    python -m training.experiments hat --smoke
    python -m training.experiments hat --base base-small     # no teacher: toolgym's expert plays under each level

The data (`prepare_demonstrations`, cached under var/experiments/data/): toolgym's expert on toolgym/chain, training
seeds 20,000-20,063 (disjoint from the zoo's SFT demonstrations and corpus), once under each harness level through
the runner, with the harness's step cap at MAX_TURNS = 3, so full and guided record their "one step is left: verify"
decision before the answer; light and tools-only record none (the expert never repeats a failing call, so the stop
check never fires; the tracker would come every 5 steps). The expert's actions are the same under every level.

Arms (every one the hat recipe, the same steps, batch size and learning rate): hat anneals full -> guided -> light ->
tools-only with the decisions supervised (harness_weight 0.5); hat_curriculum is the same curriculum without the
decision supervision (what the supervision adds); sft_full and sft_tools train on one level's records only, no
decision supervision (SFT on full-harness data, SFT on tools-only data); start is the base itself, untrained.

The table's reward and pass rate are greedy toolgym/chain play without a harness (tools-only: the condition HAT
trains for) on the test seeds. `hat_measures` plays every checkpoint again under each harness level (the sampler's
harness_level, the runner's own decisions) and reports `{level} reward` and `{level} passed`, and `tools-only gap to
start under full`: the start model's full-harness reward minus the checkpoint's tools-only reward on the same seeds
(0 or below: the checkpoint without a harness does as well as the start model with one). Measured before any run:
base-small scores 0 under full and guided (the verification note derails it) and 0.47 under light and tools-only on
16 dev seeds, so here the gap is negative for any checkpoint that plays chain; compare the per-level rewards (README).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from environments.records import record_score
from environments.roles import HARNESS_LEVELS
from training.experiments import Arm, Evaluation, Experiment, register

TARGET = "toolgym/chain"
DEMO_SEEDS = range(20_000, 20_064)  # training seeds, disjoint from the zoo's SFT demonstrations (from 0) and corpus (10,000-19,999)
MAX_TURNS = 3  # the harness's step cap in the data and in every evaluation: chain takes 3 calls
LEARNING_RATE = 2.5e-4  # pgsft measured 1e-3 pushing every SFT arm below the start on chain; a quarter of it did least harm


def prepare_demonstrations(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the expert's passed TARGET episodes on DEMO_SEEDS under every level -> {"data": path}."""
    from training.harness_data import harness_demonstrations_file

    return {"data": harness_demonstrations_file(TARGET, DEMO_SEEDS, max_turns=MAX_TURNS)}


@cache
def level_rewards(checkpoint: str, base: str, seeds: tuple[int, ...], style: tuple[bool, int]) -> dict[str, tuple[float, ...]]:
    """Greedy TARGET play of the checkpoint on `seeds` under each harness level, every level's episodes in one batch:
    {level: reward per seed} and {level + " passed": 1.0/0.0 per seed}. Played once per argument tuple in a process
    (the start model's full-harness play serves every arm's gap)."""
    import torch

    from training.data import PromptStyle
    from training.experiments.runner import load_checkpoint
    from training.sampling import rollout_episodes

    model, tokenizer = load_checkpoint(checkpoint, base)  # a LoRA run's adapter over the base, too
    ev = EXPERIMENT.evaluation
    jobs = [(TARGET, s) for _ in HARNESS_LEVELS for s in seeds]
    levels = [level for level in HARNESS_LEVELS for _ in seeds]
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            jobs,
            max_turns=ev.max_turns,
            max_new_tokens=ev.max_new_tokens,
            temperature=0.0,
            style=PromptStyle(compact_tools=style[0], max_result_chars=style[1]),
            harness_level=levels,
        )
    out: dict[str, tuple[float, ...]] = {}
    for k, level in enumerate(HARNESS_LEVELS):
        played = records[k * len(seeds) : (k + 1) * len(seeds)]
        out[level] = tuple(float(record_score(r)["composite"]) for r in played)
        out[f"{level} passed"] = tuple(float(bool(record_score(r)["passed"])) for r in played)
    return out


def hat_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: mean reward and pass rate under each harness level, and the tools-only gap to the start
    model under the full harness (module docstring)."""
    from training.experiments.runner import prompt_style_of

    style = prompt_style_of(base, values)
    key = (tuple(seeds), (style.compact_tools, style.max_result_chars))
    played, start = level_rewards(checkpoint, base, *key), level_rewards(base, base, *key)
    out = {f"{name} reward" if name in HARNESS_LEVELS else name: sum(rewards) / len(rewards) for name, rewards in played.items()}
    out["tools-only gap to start under full"] = (sum(start["full"]) - sum(played["tools-only"])) / len(seeds)
    return out


EXPERIMENT = register(
    Experiment(
        name="hat",
        question="Does annealing the harness away over teacher trajectories (full -> guided -> light -> tools-only) with the "
        "harness's decisions supervised (HAT) bring a model's tools-only play on toolgym/chain closer to the start model's play "
        "under the full harness than SFT on full-harness or on tools-only data?",
        method="hat",
        arms=(
            Arm("hat", "hat", {"harness_weight": 0.5}, "stages full, guided, light, tools-only; decisions supervised at weight 0.5"),
            Arm("hat_curriculum", "hat", {"harness_weight": 0.0}, "the same four stages, no decision supervision"),
            Arm("sft_full", "hat", {"levels": ["full"], "harness_weight": 0.0}, "SFT on the full-harness records only"),
            Arm("sft_tools", "hat", {"levels": ["tools-only"], "harness_weight": 0.0}, "SFT on the tools-only records only"),
            Arm("start", "none", {}, "the base, untrained"),
        ),
        shared={
            "max_steps": 8,  # two per stage; sized to this session's CPU (2 shared cores)
            "batch_size": 8,
            "learning_rate": LEARNING_RATE,
            "max_tokens": 1024,
        },
        evaluation=Evaluation(
            task=TARGET, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=MAX_TURNS, max_new_tokens=48
        ),
        measures="training.experiments.hat:hat_measures",
        prepare="training.experiments.hat:prepare_demonstrations",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 4, "batch_size": 2, "eval_episodes": 2},
        needs_teacher=False,
    )
)
