"""HybridCUA on the desktop (issue 45): SFT on verified GUI, shell and interleaved trajectories, then RL with a
shell-aware reward, against GUI-only SFT; evaluated on held-out desktop tasks and seeds without and with drift.

    python -m training.experiments hybridcua --smoke
    python -m training.experiments hybridcua --base smol-base --no-readme     # the full comparison (a bf16 machine)

Data (`prepare_data`, cached under var/experiments/data/): environments.desktop.hybrid's verified records of the train
tasks (move-files, reply-mail, change-setting) on seeds DEMO_SEEDS, drift none, low and high: every record replayed
(state-hash chain) and passing the grade, with the sampler's system prompt in its header. Seeds are capped at what the
SFT stage can read (sft_steps x sft_batch_size), so the smoke run exports a handful.

Arms, every one the sft_grpo recipe from the same base with the same SFT compute:
- gui-sft: SFT on the GUI-only trajectories (rl=False).
- hybrid-sft: SFT on the GUI, shell and mixed trajectories together (rl=False).
- hybrid-sft+rl: hybrid SFT, then GRPO on desktop/train on the composite (the grade alone).
- hybrid-sft+rl-shellaware: the same with reward_component="shell_aware" (environments/desktop/shell_reward.py): the
  grade plus a shell term where the shell is the efficient path, less failed and destructive shell commands.

Evaluation: desktop/test (buy-cheapest, errand: tasks never trained on) on seeds 1000-1023 (the hybrid export refuses
seeds from 1000), no drift; the table's reward is the composite, `hybrid_episode` adds success, steps per task and
shell-action share, and `drift_measures` plays the same seeds with drift high and reports the same three.
"""

from __future__ import annotations

import math
from typing import Any

from environments.records import Record, record_score
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

DEMO_SEEDS = 200  # full run: 200 seeds x 3 tasks x 3 drift levels = 1,800 trajectories per kind (5,400 hybrid)
DRIFTS = ("none", "low", "high")
DATA = {"hybridcua:gui": ("gui",), "hybridcua:hybrid": ("gui", "shell", "mixed")}
EVAL_TASK = "desktop/test"
MAX_TURNS = 16  # the GUI errand takes about 14 calls; buy-cheapest through the shell 3

# What the desktop experiments (hybridcua, computersd, gui-priors, dreamer) share: the held-out evaluation, the SFT
# stage on desktop/train, the turn and prompt limits, and the tiny model's smoke settings.
HELD_OUT = Evaluation(
    task=EVAL_TASK,
    dev_seeds=(2000, 2008),
    test_seeds=(1000, 1024),
    max_turns=MAX_TURNS,
    max_new_tokens=96,
    components=True,
    episode_measures="training.experiments.hybridcua:hybrid_episode",
)
SFT_STAGE = {"task": "desktop/train", "sft_steps": 200, "sft_batch_size": 8, "sft_learning_rate": 1e-4, "sft_max_tokens": 4096}
LIMITS = {"max_turns": MAX_TURNS, "max_new_tokens": 96, "max_prompt_tokens": 4096}
SMOKE_SFT = {"sft_steps": 1, "sft_batch_size": 1, "sft_max_tokens": 1024}
SMOKE_RL = {"max_steps": 1, "tasks_per_step": 1, "group_size": 2}
SMOKE = {
    "max_turns": 2,
    "max_new_tokens": 16,
    "max_prompt_tokens": 1024,
    "eval_episodes": 1,
    "compact_tools": True,  # the tiny model's context holds one-line tools and cut screens, not the full ones
    "max_result_chars": 300,
}


def data_file(kinds: tuple[str, ...], seeds: int) -> str:
    """The verified records of `kinds` on seeds [0, seeds), written once as JSONL under var/ (its name is its content)."""
    import json
    import tempfile
    from pathlib import Path

    from environments.desktop.hybrid import TRAIN_TASKS, export
    from environments.registry import make
    from training.sampling import system_prompt_for
    from training.zoo.build import var_root

    path = var_root() / "experiments" / "data" / f"hybridcua-{'+'.join(kinds)}-0-{seeds}.jsonl"
    if not path.exists():
        with tempfile.TemporaryDirectory() as folder:
            export(list(kinds), list(TRAIN_TASKS), list(range(seeds)), list(DRIFTS), Path(folder), rl=False)
            lines = [line for kind in kinds for line in (Path(folder) / f"{kind}.jsonl").read_text().splitlines()]
        records = [json.loads(line) for line in lines]
        assert records, f"hybridcua: no verified {kinds} record on seeds 0-{seeds - 1}"
        prompts: dict[str, str] = {}
        for r in records:
            h = r["header"]
            if h["task"] not in prompts:
                prompts[h["task"]] = system_prompt_for(make(f"desktop/{h['task']}", seed=0))
            h["harness"] = {**(h.get("harness") or {}), "system_prompt": prompts[h["task"]]}
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        partial.rename(path)  # a file under this name is always complete
    return str(path)


def prepare_data(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the arm's verified trajectories (its `data` names the kinds) -> {"data": path}."""
    kinds = DATA.get(str(values.get("data")))
    assert kinds is not None, f"hybridcua: data must be one of {sorted(DATA)}, got {values.get('data')!r}"
    needed = int(values.get("sft_steps", 1)) * int(values.get("sft_batch_size", 1))
    seeds = min(DEMO_SEEDS, max(1, math.ceil(needed / (3 * len(DRIFTS) * len(kinds)))))
    return {"data": data_file(kinds, seeds)}


def hybrid_episode(record: Record) -> dict[str, float]:
    """Evaluation.episode_measures: success (passed), steps (calls but submit) and the share of them that are shell."""
    from environments.desktop.hybrid import calls_of

    names = calls_of(record)
    return {
        "success": float(bool(record_score(record).get("passed"))),
        "steps per task": float(len(names)),
        "shell share": names.count("shell") / len(names) if names else 0.0,
    }


def drift_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: the checkpoint's greedy play of the same test seeds with drift high."""
    import torch

    from training.experiments.runner import evaluation_jobs, load_checkpoint, prompt_style_of
    from training.sampling import rollout_episodes

    model, tokenizer = load_checkpoint(checkpoint, base)
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            evaluation_jobs(EVAL_TASK, seeds),
            max_turns=int(values.get("max_turns", MAX_TURNS)),
            max_new_tokens=int(values.get("max_new_tokens", 96)),
            temperature=0.0,
            style=prompt_style_of(base, values),
            max_prompt_tokens=int(values.get("max_prompt_tokens", 4096)),
            env_options={"drift": "high"},
        )
    rows = [hybrid_episode(r) for r in records]
    return {f"drift high {name}": sum(r[name] for r in rows) / len(rows) for name in rows[0]}


EXPERIMENT = register(
    Experiment(
        name="hybridcua",
        question="Does SFT on hybrid GUI + shell trajectories beat GUI-only SFT on held-out desktop tasks, and does RL with "
        "a shell-aware reward add to RL on the grade alone (success, steps per task, shell share, also under drift)?",
        method="hybrid-sft+rl-shellaware",
        arms=(
            Arm("gui-sft", "sft_grpo", {"data": "hybridcua:gui", "rl": False}, "SFT on verified GUI-only trajectories"),
            Arm("hybrid-sft", "sft_grpo", {"data": "hybridcua:hybrid", "rl": False}, "SFT on verified GUI, shell and mixed trajectories"),
            Arm("hybrid-sft+rl", "sft_grpo", {"data": "hybridcua:hybrid"}, "hybrid SFT, then GRPO on desktop/train on the grade"),
            Arm(
                "hybrid-sft+rl-shellaware",
                "sft_grpo",
                {"data": "hybridcua:hybrid", "reward_component": "shell_aware"},
                "hybrid SFT, then GRPO on the shell-aware reward",
            ),
        ),
        shared={
            **SFT_STAGE,
            **LIMITS,
            "max_steps": 30,
            "tasks_per_step": 4,
            "group_size": 4,
            "learning_rate": 1e-5,
            "temperature": 1.0,
            "train_seed_start": 0,
            "train_seeds": 1000,
            "eval_seed_start": 3000,
            "eval_episodes": 8,
            "eval_every": 0,
        },
        evaluation=HELD_OUT,
        measures="training.experiments.hybridcua:drift_measures",
        prepare="training.experiments.hybridcua:prepare_data",
        train_seeds=(0, 1, 2),
        smoke={**SMOKE_SFT, **SMOKE_RL, **SMOKE},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={"tasks_per_step": 8, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
        ),
    )
)
