"""FloWright: does training a workflow's roles on their own structure-aware credit make the workflow succeed more, and
does training two roles together beat training one?

    python -m training.experiments flowright --smoke
    python -m training.experiments flowright --base PATH          # base-small; no teacher needed

Every trained arm runs training/recipes/flowright.py on relays of two stages drawn from toolgym lookup, chain and echo
(environments/relay.py; training relay seeds 0-999), with the relay's reference plan (a finder node gathers, a reporter
node answers, per stage). team trains the finder and the reporter together, each on its own turns and credit; finder
trains the finder alone while a frozen copy of the start model plays the reporter; none is the start model playing
every role. `flowright_measures` plays the held-out relays (relay seeds = the test seeds, 100000-100063, whose stages
use toolgym seeds from 200000 on) greedily with each arm's players (the checkpoint in its trained roles, the start
model in the others) and reports workflow success (every stage passed), the mean composite, the share of plan nodes
done and each role's mean FloWright reward. The main table is single-agent greedy play of toolgym/chain on the test
seeds: whether what the roles learnt carries over to one agent doing the whole task.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register


def flowright_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: workflow figures of greedy play on the held-out relays `seeds` (module docstring)."""
    from training import make_config
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.modeling import load_model
    from training.recipes.flowright import FlowrightConfig, relay_players, workflow_stats
    from training.workflow_play import play_relays

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(FlowrightConfig)}
    config = make_config(
        "flowright",
        {
            **{k: v for k, v in values.items() if k in known},
            "model": base,
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
        },
    )
    assert isinstance(config, FlowrightConfig)
    model, tokenizer = load_checkpoint(checkpoint, base)
    start = model if checkpoint == base or config.others == "live" else load_model(base, trainable=False)[0]
    team, generator = relay_players(config, model, start, tokenizer, temperature=0.0)
    records = play_relays(seeds, players=team, generator=generator, tasks=config.tasks, stages=config.stages)
    return workflow_stats(records, config.credit_weights)


EXPERIMENT = register(
    Experiment(
        name="flowright",
        question="Does training a workflow's roles with GRPO groups of their own hierarchical, structure-aware reward make "
        "two-stage toolgym relays succeed more than the untrained workflow, and do two roles trained together beat one?",
        method="team",
        arms=(
            Arm(
                "team", "flowright", {"train_roles": ["finder", "reporter"]}, "finder and reporter trained together, each on its own credit"
            ),
            Arm("finder", "flowright", {"train_roles": ["finder"]}, "the finder trained; the reporter is the frozen start model"),
            Arm("none", "none", {}, "the untrained workflow: the start model plays every role"),
        ),
        shared={
            "tasks": ["toolgym/lookup", "toolgym/chain", "toolgym/echo"],
            "stages": 2,
            "generator": "plan",
            "others": "frozen",
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,
            "max_new_tokens": 48,
            "train_seed_start": 0,
            "train_seeds": 1000,
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 400,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        tuning={"learning_rate": (2e-4,)},  # one point, the same for every arm
        measures="training.experiments.flowright:flowright_measures",
        train_seeds=(0, 1, 2),
        smoke={
            "max_steps": 2,
            "tasks_per_step": 1,
            "group_size": 2,
            "max_new_tokens": 16,
            "tasks": ["toolgym/lookup", "toolgym/echo"],
            "eval_episodes": 2,
        },
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # each role turn is its own sequence (prompt + completion, ~400 tokens): 16 relays x 4 episodes x ~4 turns.
            # Not measured on a GPU yet.
            overrides={"tasks_per_step": 8, "group_size": 4, "grad_accum": 4, "max_new_tokens": 96, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
