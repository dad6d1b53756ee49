"""Does training on improvement trajectories (round after round, each better) beat SFT on the final solutions alone?

    python -m training.experiments arex --smoke
    python -m training.experiments arex --base PATH          # base-small; no teacher needed

Both arms run the sft recipe, same steps, batches and learning-rate grid, from the same base, on records of the
same episodes (training seeds 10,000-10,011 of improve-rounds/digits, gcd and tune): `trajectories` trains on the
verified chains environments.improve.synth writes (every submit of a chain, each scored strictly better by the
verifier than the last, the scores visible in the tool results), `final-only` on the same chains' last solution
submitted once. HELD OUT: improve-rounds/tune-sparse (test split: a dataset shape neither arm saw, 10 evaluations),
played greedily on test seeds 100,000+. Caveat: the chains are longer, so the trajectory arm reads more tokens per
step (about 3x on the calc tasks); equal steps, not equal tokens.

Measures beside reward (the best round's normalised test R^2): the score's components, mean over test episodes:
final_quality (= the reward), gain_per_round (validation R^2 gained per round used) and late_share (the part of
the gain made in the last third of the rounds): whether the trained agent keeps improving rather than stopping
after one submission.
"""

from __future__ import annotations

from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

TASKS = ("improve-rounds/digits", "improve-rounds/gcd", "improve-rounds/tune")
DEMO_SEEDS = (10_000, 10_012)  # [start, stop): neither the dev (50,000+) nor the test (100,000+) seeds
KINDS = {"arex:chain": "chain", "arex:final-only": "final-only"}  # an arm's `data` names which synthesis it trains on


def prepare_data(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the arm's synthesised records (its `data` names the kind), written once as JSONL under
    var/experiments/data/ with the sampler's system prompt in each header -> {"data": path}."""
    import json
    from pathlib import Path

    from environments.improve.synth import synthesise
    from training.sampling import system_prompt_for
    from training.zoo.build import var_root

    kind = KINDS.get(str(values.get("data")))
    assert kind is not None, f"arex: data must be one of {sorted(KINDS)}, got {values.get('data')!r}"
    path = var_root() / "experiments" / "data" / f"arex-{kind}-{DEMO_SEEDS[0]}-{DEMO_SEEDS[1]}.jsonl"
    if not path.exists():
        records, dropped = synthesise(TASKS, range(*DEMO_SEEDS), kind=kind, harness=lambda env: {"system_prompt": system_prompt_for(env)})
        assert records, f"arex: no {kind} record verified; dropped: {dropped}"
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        partial.rename(path)  # a file under this name is always complete
    return {"data": str(path)}


EXPERIMENT = register(
    Experiment(
        name="arex",
        question="Does SFT on verified improvement trajectories (many rounds, each better) make an agent that keeps "
        "improving on an unseen tuning task, against SFT on the same chains' final solutions alone?",
        method="trajectories",
        arms=(
            Arm("trajectories", "sft", {"data": "arex:chain"}, "every round of each verified improvement chain"),
            Arm("final-only", "sft", {"data": "arex:final-only"}, "only the chain's final solution, submitted once"),
            Arm("none", "none", {}, "no training: the start checkpoint"),
        ),
        shared={
            "data": "arex:chain",  # every arm names its own; the `none` arm reads nothing
            "max_steps": 64,  # measured: 64 steps (about 7 epochs of the chains) take base-small from 0 valid calls to 0.96 on dev
            "batch_size": 4,
            "max_tokens": 2048,
            "lr_schedule": "constant",
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 400,
        },
        evaluation=Evaluation(
            task="improve-rounds/tune-sparse",
            dev_seeds=(50_000, 50_016),
            test_seeds=(100_000, 100_032),
            max_turns=12,
            max_new_tokens=96,
            components=True,
        ),
        tuning={"learning_rate": (3e-4,)},  # one point (CPU): the earlier 8-step run chose 1e-4 from {1e-4, 3e-4} at no valid call
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 1, "batch_size": 1, "max_tokens": 512, "eval_episodes": 1},
        needs_teacher=False,
        prepare="training.experiments.arex:prepare_data",
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={"batch_size": 4, "grad_accum": 2, "gradient_checkpointing": True, "max_tokens": 4096},
            steps=3,  # not measured on a GPU yet
        ),
    )
)
