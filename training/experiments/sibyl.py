"""Sibyl: does learning WHEN to consult beat never consulting, always consulting, and consulting at random as often?

    python -m training.experiments sibyl --smoke
    python -m training.experiments sibyl --base PATH          # the anchor is the consultant: no teacher needed

Arms, from one base on toolgym/chain (owner -> lookup -> answer), the consultant being toolgym's expert anchor:
- sibyl: training/recipes/sibyl.py, its three stages (consultation-free GRPO, SFT at decisive disagreements,
  consultation-aware GRPO at `consult_cost` per call). Its router is the policy itself (its own consult calls).
- never: the same recipe with consult=False: consultation-free GRPO for all of its steps (equal compute).
- always: no training; at every decision the runner consults and the next turn does what the consultant suggested.
- random: the never arm's training (a run of its own, so ~1 run of duplicated compute per seed), evaluated with a
  random router: at each decision, with probability p the runner consults and the next turn follows the advice,
  where p is the sibyl run's call rate (consultations per decision) measured on the dev seeds for the same
  training seed: the learning-to-defer "random deferral at equal coverage" control.

A decision is an actor turn that does not come right after a consultation (that turn is the follow). Forced turns
(always, random) go through the sampler like sampled ones (training.sampling `router`), so consultation and
following cost the same turns in every arm; a forced follow is perfect, which favours the baselines.

The runner's standard table plays each checkpoint greedily WITHOUT the consult tool (what the actor does alone).
`measures` plays the test seeds under each arm's router and reports success (pass rate), consultations per episode,
call rate (per decision) and the reward net of consultation costs. The random arm finds the sibyl run of its
training seed through the runner's folder layout (out/<arm>/<point>-seed<S>-<hash>/result.json); run the sibyl arm
first (the default order).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from environments.records import Record, record_score
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

ROUTERS = {"sibyl": "policy", "never": "never", "always": "always", "random": "random"}
"""Who decides when the actor consults, per arm (the measures' router)."""

EXPERIMENT = register(
    Experiment(
        name="sibyl",
        question="Does an actor that learns when to consult (SFT at decisive disagreements, then RL with a per-call cost) "
        "beat never consulting, always consulting and a random router with its call rate, on success and on consultations?",
        method="sibyl",
        arms=(
            Arm("sibyl", "sibyl", {}, "GRPO, then SFT to consult at decisive disagreements, then GRPO with the consult tool at a cost"),
            Arm("never", "sibyl", {"consult": False}, "consultation-free GRPO for the same steps"),
            Arm("always", "none", {}, "no training: consult at every decision and follow the advice"),
            Arm("random", "sibyl", {"consult": False}, "the never arm's training; consults at random at sibyl's dev call rate"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 12,  # sized to this session's CPU (2 shared cores)
            "stage1_steps": 4,
            "stage2_steps": 3,
            "stage2_episodes": 8,
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,
            "max_turns": 6,  # owner, lookup, answer: room to consult before each
            "max_new_tokens": 48,
            "consult_cost": 0.05,
            # base-small's mean log-prob of the expert's call where its own greedy call differs, on 16 training seeds:
            # two clusters, -0.76..-0.60 and -0.13..-0.07 nats/token; -0.5 splits them (-1.0 kept no state at all)
            "disagree_max_logp": -0.5,
            "train_seed_start": 0,
            "train_seeds": 1000,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=6, max_new_tokens=48
        ),
        tuning={"learning_rate": (2e-4,)},  # one point, the same for every arm
        measures="training.experiments.sibyl:measures",
        train_seeds=(0, 1, 2),
        smoke={
            "max_steps": 3,
            "stage1_steps": 1,
            "stage2_steps": 1,
            "stage2_episodes": 1,
            "tasks_per_step": 1,
            "group_size": 2,
            "max_turns": 2,
            "max_new_tokens": 16,
            "eval_episodes": 2,
        },
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # full fine-tuning in bf16 ~ 20 GB with AdamW, as tjpo; stage 2 adds one forward of the states. Not measured on a GPU yet.
            overrides={
                "tasks_per_step": 16,
                "group_size": 4,
                "stage2_episodes": 32,
                "grad_accum": 4,
                "max_new_tokens": 128,
                "gradient_checkpointing": True,
                "stage1_steps": 1,  # one step of each stage in the 3-step check
                "stage2_steps": 1,
            },
            steps=3,
        ),
    )
)


def call_rate(records: list[Record]) -> float:
    """Consultations per decision over the records (training.recipes.sibyl.decisions; 0 when there was no decision)."""
    from training.recipes.sibyl import decisions

    counts = [decisions(r) for r in records]
    return sum(c for c, _ in counts) / max(sum(d for _, d in counts), 1)


# --- measures ---------------------------------------------------------------------------------------------------------


def play(model: Any, tokenizer: Any, config: Any, seeds: list[int], router: str, rate: float = 0.0) -> list[dict[str, Any]]:
    """Greedy episodes of the config's task on `seeds` under `router` (ROUTERS' values), consultations at its cost."""
    import torch

    from training.recipes.sibyl import consultation_for, deferral_router
    from training.sampling import rollout_episodes

    consultation = consultation_for(config) if router != "never" else None
    if consultation is not None and router != "policy":  # the router consults; the actor's prompt has no consult tool
        consultation = dataclasses.replace(consultation, offered=False)
    route = deferral_router(1.0 if router == "always" else rate) if router in ("always", "random") else None
    with torch.no_grad():
        return rollout_episodes(
            model,
            tokenizer,
            [(config.task, s) for s in seeds],
            max_turns=config.max_turns,
            max_new_tokens=config.max_new_tokens,
            temperature=0.0,
            style=config.prompt_style,
            max_prompt_tokens=config.max_prompt_tokens,
            consultation=consultation,
            router=route,
        )


def figures(records: list[Record]) -> dict[str, float]:
    """success, consultations per episode, call rate (per decision), reward net of consultation costs."""
    from training.data import record_reward
    from training.recipes.sibyl import decisions

    n = max(len(records), 1)
    return {
        "success": sum(1.0 for r in records if record_score(r)["passed"]) / n,
        "consultations per episode": sum(decisions(r)[0] for r in records) / n,
        "call rate": call_rate(records),
        "reward net of cost": sum(record_reward(r) or 0.0 for r in records) / n,
    }


def _config(base: str, values: dict[str, Any]) -> Any:
    from training import make_config
    from training.experiments.runner import prompt_style_of
    from training.recipes.sibyl import SibylConfig

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(SibylConfig)}
    ev = EXPERIMENT.evaluation  # the evaluation's limits, within a smoke's smaller ones (as the runner plays them)
    limits = {
        "max_turns": min(ev.max_turns, values.get("max_turns", ev.max_turns)),
        "max_new_tokens": min(ev.max_new_tokens, values.get("max_new_tokens", ev.max_new_tokens)),
    }
    return make_config(
        "sibyl",
        {
            **{k: v for k, v in values.items() if k in known},
            **limits,
            "model": base,
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
        },
    )


def _sibyl_checkpoint(run_folder: Path, run: dict[str, Any]) -> str:
    """The sibyl arm's checkpoint for the same training seed and point (the runner's folder layout)."""
    out = run_folder.parent.parent
    for path in sorted((out / "sibyl").glob(f"*-seed{run['seed']}-*/result.json")):
        other = json.loads(path.read_text())
        if other.get("point") == run.get("point") and other.get("checkpoint"):
            return str(other["checkpoint"])
    raise FileNotFoundError(f"no sibyl run for training seed {run['seed']} under {out / 'sibyl'}: run the sibyl arm first")


def measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: `figures` of the test episodes under the arm's router (module docstring)."""
    from training.experiments.runner import load_checkpoint

    run_folder = Path(checkpoint).parent
    result = run_folder / "result.json"
    run = json.loads(result.read_text()) if result.exists() else None
    router = ROUTERS[run["arm"]] if run else "always"  # the start checkpoint itself: only the none arm (always)
    config = _config(base, values)
    out: dict[str, float] = {}
    rate = 0.0
    if router == "random":
        assert run is not None
        sibyl, tokenizer = load_checkpoint(_sibyl_checkpoint(run_folder, run), base)
        start, stop = EXPERIMENT.evaluation.dev_seeds
        rate = call_rate(play(sibyl, tokenizer, config, list(range(start, min(stop, start + len(seeds)))), "policy"))
        out["router rate"] = rate
    model, tokenizer = load_checkpoint(checkpoint, base)
    return {**figures(play(model, tokenizer, config, seeds, router, rate)), **out}
