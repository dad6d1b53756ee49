"""The supervision horizon of SFT, and selective long-horizon refinement at equal compute (sft's horizon options).

    python -m training.experiments horizon --smoke     # SFT on the first 1, 2 or all agent turns of each demonstration
    python -m training.experiments refine --smoke      # warm start on first turns + selective refinement vs whole episodes
    python -m training.experiments NAME --base PATH    # the full comparison -> training/README.md

Task toolgym/chain ("which color is the thing <person> owns?": owner, then lookup, then answer). The horizon
matters there because the reward sits late: 0.15 for the owner call, 0.15 for the lookup, 0.7 for the answer, so
a horizon that stops before the third turn never supervises what pays most. Phantom bridge (5 turns, ~710 tokens)
would be longer, but base-small answers none of it (composite 0 on every dev seed tried): a floor, not a test.
On base-small's tokenizer every chain demonstration is 210 tokens and its agent turns' trained tokens end at 111,
154 and 197, so horizons of 1, 2 and all agent turns keep 111, 154 and 210 tokens (`horizon_turns` rather than
`horizon_tokens`: the smoke's tiny tokenizer, whose episodes are longer, then cuts at the same turns).

Data: `demonstrations` (the experiments' `prepare`) writes the expert's passed episodes on seeds 10,000-10,031 once
to var/experiments/data/ (seeds neither dev nor test); every arm reads the same file. Arms differ only in horizon
and refinement fields. `refine` holds compute equal through sft's `token_budget`: tokens read by training steps
plus a third of the tokens the selection scores (training/recipes/sft.py); `full` spends it on whole episodes.
"""

from __future__ import annotations

from typing import Any

from training.experiments import Arm, Evaluation, Experiment, register

TASK = "toolgym/chain"
DEMO_SEEDS = (10_000, 10_032)  # [start, stop): neither the dev (50,000+) nor the test (100,000+) seeds
DEMO_TURNS = 8  # the expert needs 3


def demonstrations(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the task's scripted, passed demonstrations, generated once into a file under
    var/experiments/data/ (training.scripted.demonstrations_file); returns {"data": its path}."""
    from training.scripted import demonstrations_file

    return {"data": demonstrations_file(experiment.evaluation.task, range(*DEMO_SEEDS), max_turns=DEMO_TURNS)}


EVALUATION = Evaluation(task=TASK, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48)
SHARED: dict[str, Any] = {
    "max_steps": 8,  # sized to this session's CPU (2 shared cores): a run is seconds of SFT and ~20 s of evaluation
    "batch_size": 8,
    "max_tokens": 1024,
    "lr_schedule": "constant",
    "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
    "max_result_chars": 400,
}
# The same grid for every arm, chosen on dev seeds. base-small's own SFT ended its cosine from 1e-3 near 0; a constant
# 1e-3 restart lifted the loss from 0.03 to 0.2 in one step (a sizing run), hence the lower points.
TUNING: dict[str, tuple[Any, ...]] = {"learning_rate": (1e-4, 3e-4)}
TRAIN_SEEDS = (0, 1, 2, 3, 4)  # a run is cheap here (~5 s of SFT, ~20 s per 64 evaluation episodes): more seeds, tighter CIs
PREPARE = "training.experiments.horizon:demonstrations"

HORIZON = register(
    Experiment(
        name="horizon",
        question="How much does SFT's supervision horizon matter on toolgym/chain: whole demonstrations against their "
        "first two or first agent turn, at the same steps?",
        method="full",
        arms=(
            Arm("full", "sft", {}, "whole demonstrations: owner, lookup, answer (210 tokens on base-small)"),
            Arm("turns-2", "sft", {"horizon_turns": 2}, "the first 2 agent turns (154 tokens): the answer is never supervised"),
            Arm("turns-1", "sft", {"horizon_turns": 1}, "the first agent turn only (111 tokens): the owner call"),
            Arm("none", "none", {}, "no training: the start checkpoint"),
        ),
        shared=SHARED,
        evaluation=EVALUATION,
        tuning=TUNING,
        train_seeds=TRAIN_SEEDS,
        smoke={"max_steps": 2, "batch_size": 2, "eval_episodes": 4},
        needs_teacher=False,
        prepare=PREPARE,
    )
)

# The full arm's 8 steps: 8 steps x 8 whole demonstrations x 210 tokens (base-small's tokenizer). A refining arm spends
# 4 x 8 x 111 on first turns, a third of 32 x 210 on the selection, then ~4.5 steps of whole episodes (13,352 in all).
BUDGET = 13_440
WARM_START = {"horizon_turns": 1, "refine_fraction": 0.25}

REFINE = register(
    Experiment(
        name="refine",
        question="At equal compute, does a warm start on first turns plus refinement on whole episodes selected by the "
        "warm model's likelihood of their later turns beat whole-episode SFT, and does the selection beat a random one?",
        # The paper's selection keeps the continuations the warm-start model finds MOST likely (it refines where the
        # model is already near the demonstration); the least likely quarter is the ablation, not the method.
        method="likely",
        arms=(
            Arm(
                "likely",
                "sft",
                {**WARM_START, "refine_select": "likely"},
                "4 steps on first turns, then the quarter of episodes whose later turns the warm model finds most likely",
            ),
            Arm("unlikely", "sft", {**WARM_START, "refine_select": "unlikely"}, "the same, refining on the least likely quarter"),
            Arm("random", "sft", {**WARM_START, "refine_select": "random"}, "the same, refining on a random quarter (seeded)"),
            Arm("full", "sft", {}, "whole demonstrations for the whole budget (8 steps)"),
        ),
        # max_steps only caps: the token budget ends every arm (full after 8 steps, a refining one after 9 shorter ones)
        shared={**SHARED, "max_steps": 24, "token_budget": BUDGET, "warm_start_steps": 4},
        evaluation=EVALUATION,
        tuning=TUNING,
        train_seeds=TRAIN_SEEDS,
        # the tiny tokenizer's compact chain episode is ~275 tokens: 1 warm step, the selection (~2.9k), 1 refining step; full: 7 steps
        smoke={"max_steps": 8, "batch_size": 2, "warm_start_steps": 1, "token_budget": 4_000, "eval_episodes": 4},
        needs_teacher=False,
        prepare=PREPARE,
    )
)
