"""Infinite-Dreamer on the desktop (issue 45): an agent trained on dreamed trajectories only, against the same agent
trained on the same number of real ones and against the untrained base, played on the real desktop.

    python -m training.experiments dreamer --smoke
    python -m training.experiments dreamer --base smol-base --no-readme     # the full comparison (a bf16 machine)

Data (`prepare_data`, cached under var/experiments/data/):
- real: hybridcua's verified GUI records (environments.desktop.hybrid, kind gui) of the train tasks (move-files,
  reply-mail, change-setting) on seeds 0..k-1, drift none, low and high, with the sampler's system prompt;
- dreamed: each of those records dreamed by environments/desktop/dream.py: from the real opening observation
  (the brief with the task and the opening screen, kept as it is), every action answered by the learnt-edits world
  model's prediction from its own last one (`header.meta.dreamed`; no state hash; replay refuses them). The same
  N records, tasks, seeds, drift levels and actions as the real arm: only the screens after the first are dreamed.
  The world model learns from the anchors' episodes of the train tasks on seeds 900..900+m-1 (m = min(10, k);
  disjoint from the real seeds, so it never saw the transitions it dreams), drift none, low and high. Its screens
  are worldmodel_text.tree_text renderings, not the environment's own result format: a dreamed record differs from a
  real one in how screens read as well as in what they show, as a dreamed corpus does.
N = sft_steps x sft_batch_size, capped at DEMO_SEEDS x 9 (3 tasks x 3 drift levels per seed).

Arms, both trained ones the sft_grpo recipe with rl=False from the same base and the same SFT compute:
- base: no training (the start checkpoint).
- dreamed-sft: SFT on the N dreamed trajectories.
- real-sft: SFT on the N real trajectories.

Evaluation: desktop/test (buy-cheapest, errand) on seeds 1000-1023, no drift (success, steps per task, shell share
beside the table), and with drift high (hybridcua's drift_measures): the real desktop, never a dream.
"""

from __future__ import annotations

import math
from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Experiment, GpuConfig, register
from training.experiments.hybridcua import DRIFTS, HELD_OUT, LIMITS, SFT_STAGE, SMOKE, SMOKE_SFT

DEMO_SEEDS = 200  # as hybridcua: 200 seeds x 3 tasks x 3 drift levels = 1,800 trajectories of each kind
WORLD_MODEL_SEEDS = 900  # the world model's anchor episodes start here (the real records use seeds from 0)
WORLD_MODEL_ANCHORS = ("oracle", "cli-preferring", "gui-only", "random-valid")
DATA = ("dreamer:dreamed", "dreamer:real")


def dreamed_file(seeds: int) -> str:
    """The dream of every real GUI record on seeds [0, seeds), written once as JSONL under var/."""
    import json
    from pathlib import Path

    from environments.desktop.dream import TRAIN_TASKS, dreamed_record, rollout, train_model
    from environments.desktop.worldmodel import anchor_records, record_transitions
    from training.experiments.hybridcua import data_file
    from training.zoo.build import var_root

    path = var_root() / "experiments" / "data" / f"dreamer-dreamed-0-{seeds}.jsonl"
    if not path.exists():
        real = [json.loads(line) for line in Path(data_file(("gui",), seeds)).read_text().splitlines()]
        world_seeds = range(WORLD_MODEL_SEEDS, WORLD_MODEL_SEEDS + min(10, seeds))
        model = train_model(t for r in anchor_records(TRAIN_TASKS, world_seeds, DRIFTS, WORLD_MODEL_ANCHORS) for t in record_transitions(r))
        out = []
        for r in real:
            transitions = list(record_transitions(r))
            dreamed = dreamed_record(model, r, transitions, rollout(model, transitions, len(transitions))[0])
            dreamed["steps"][0]["message"] = r["steps"][0]["message"]  # the brief (task and opening screen) is real
            dreamed["header"]["harness"] = r["header"]["harness"]
            out.append(dreamed)
        assert all(len(d["steps"]) == len(r["steps"]) for d, r in zip(out, real, strict=True)), "dreamer: a dream lost steps"
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in out))
        partial.rename(path)  # a file under this name is always complete
    return str(path)


def prepare_data(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the arm's trajectories (its `data`: dreamed or real) -> {"data": path}; the base arm none."""
    from training.experiments.hybridcua import data_file

    if "data" not in values:
        return {}
    assert values["data"] in DATA, f"dreamer: data must be one of {DATA}, got {values['data']!r}"
    needed = int(values.get("sft_steps", 1)) * int(values.get("sft_batch_size", 1))
    seeds = min(DEMO_SEEDS, max(1, math.ceil(needed / (3 * len(DRIFTS)))))
    return {"data": dreamed_file(seeds) if values["data"] == "dreamer:dreamed" else data_file(("gui",), seeds)}


DREAMER = register(
    Experiment(
        name="dreamer",
        question="Does an agent trained on dreamed desktop trajectories only match the same agent trained on as many real ones, "
        "and beat the untrained base, on held-out tasks of the real desktop?",
        method="dreamed-sft",
        arms=(
            Arm("base", "none", {}, "no training: the start checkpoint"),
            Arm("dreamed-sft", "sft_grpo", {"data": "dreamer:dreamed", "rl": False}, "SFT on N dreamed trajectories (world-model screens)"),
            Arm("real-sft", "sft_grpo", {"data": "dreamer:real", "rl": False}, "SFT on the same N trajectories as played"),
        ),
        shared={**SFT_STAGE, **LIMITS, "eval_episodes": 8, "eval_every": 0},
        evaluation=HELD_OUT,
        measures="training.experiments.hybridcua:drift_measures",
        prepare="training.experiments.dreamer:prepare_data",
        train_seeds=(0, 1, 2),
        smoke={**SMOKE_SFT, **SMOKE},
        needs_teacher=False,
        gpu=GpuConfig(architecture=QWEN3_1_7B, overrides={"sft_batch_size": 8, "max_new_tokens": 128, "gradient_checkpointing": True}),
    )
)
