"""Does ranking the expert's actions under swapped goals (EVOKE) beside SFT transfer better than SFT alone?

    python -m training.experiments evoke --smoke
    python -m training.experiments evoke --base PATH          # base-small; no teacher needed

Both arms train the evoke recipe on the same demonstrations, batches and steps: toolgym's expert on lookup and
echo (training seeds 0-63). HELD OUT: toolgym/chain, the task played greedily for the table (test seeds
100000-100063), and Phantom altogether, an environment neither arm's fine-tuning sees. Caveat: base-small's own
SFT (training/zoo) saw chain and Phantom lookup/bridge demonstrations on their training seeds and universes, so
"unseen" holds for this fine-tuning stage, not for the base; the test seeds and Phantom's test universes are new
to both.

Measures (per checkpoint, mean +- CI over training seeds): goal-conditioned rank accuracy on held-out states,
`experiment_measures` below: at every agent turn of the expert's episodes on the first MEASURE_SEEDS test seeds,
the state under its own and `alternatives` other goals (training/goal_swap.py) and the share of (state, goal)
rows whose own action scores first; for toolgym/chain (unseen task), phantom/lookup-test (unseen environment)
and toolgym/lookup (a training task, held-out seeds: the in-distribution reference).
"""

from __future__ import annotations

from typing import Any

from environments.records import record_score
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

MEASURE_SEEDS = 12  # expert episodes per measured task: 24-36 states, each a (K+1) x (K+1) table of sequences
MEASURED = {"chain": "toolgym/chain", "phantom": "phantom/lookup-test", "lookup": "toolgym/lookup"}

EXPERIMENT = register(
    Experiment(
        name="evoke",
        question="Does ranking the expert's action above the actions other goals call for, at the same states (EVOKE), "
        "beside SFT, beat SFT alone on an unseen toolgym task, and does the goal-conditioned ranking transfer to Phantom?",
        method="evoke",
        arms=(
            Arm("evoke", "evoke", {"rank_coef": 1.0}, "SFT + 1.0 x pairwise hinge ranking of goal-swapped candidates"),
            Arm("sft", "evoke", {"rank_coef": 0.0}, "SFT alone on the same demonstrations and batches (ranking only measured)"),
        ),
        shared={
            "tasks": ["toolgym/lookup", "toolgym/echo"],  # toolgym/chain and Phantom are held out
            "train_seed_start": 0,
            "train_seeds": 64,
            "alternatives": 2,
            "rank_loss": "hinge",
            "margin": 0.1,
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "batch_size": 4,
            "max_tokens": 1024,
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 400,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        tuning={"learning_rate": (2e-4,)},  # one point, the same for every arm
        measures="training.experiments.evoke:experiment_measures",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "train_seeds": 4, "batch_size": 2, "eval_episodes": 2},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # 4 states x 9 candidate sequences (~300 tokens) + 8 demonstrations per micro-batch; logits of 36 x 300 x 152k
            # in bf16 ~ 3.3 GB, the log-softmax gathered in fp32 chunks. Not measured on a GPU yet.
            overrides={"batch_size": 8, "grad_accum": 2, "gradient_checkpointing": True, "max_tokens": 2048},
            steps=3,
        ),
    )
)


def experiment_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Rank accuracy of the checkpoint on held-out states of each MEASURED task (module docstring), in the base's
    prompt style; `{name}_rank_accuracy` over every (state, goal) row and `{name}_rank_accuracy_true` over the
    recorded goal's rows."""
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.goal_swap import swaps_for
    from training.recipes.evoke import rank_accuracy
    from training.scripted import scripted_episode
    from training.zoo.corpus import demo_policy

    style = prompt_style_of(base, values)
    model, tokenizer = load_checkpoint(checkpoint, base)  # a LoRA run's adapter over the base, too
    out: dict[str, float] = {}
    for name, task in MEASURED.items():
        records = [scripted_episode(demo_policy(task, s), task, s, max_turns=12) for s in seeds[:MEASURE_SEEDS]]
        swaps = swaps_for([r for r in records if record_score(r)["passed"]], alternatives=int(values.get("alternatives", 2)))
        figures = rank_accuracy(model, tokenizer, swaps, style=style, max_tokens=2048)
        out[f"{name}_rank_accuracy"] = figures["rank_accuracy"]
        out[f"{name}_rank_accuracy_true"] = figures["rank_accuracy_true"]
    return out
