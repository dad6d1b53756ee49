"""Federated experience: do three organisations with private variants of one task gain from sharing LoRA adapters
(FedAvg) or distilled skills over training alone, and what do the shared artifacts leak?

    python -m training.experiments federation --smoke
    python -m training.experiments federation --base PATH          # base-small; no teacher needed

Every arm runs training/recipes/federation.py: participants a, b and c each hold `records` expert episodes of their
own fedgym catalogue (environments/fedgym: the same lookup task, different private colors and a planted canary per
organisation) and train LoRA with SFT for `max_steps` steps per round. local shares nothing; fedavg shares the
adapters, averaged by examples into the next round's shared model; skills shares the procedures distilled from
passed episodes, merged and prepended to every participant's prompt. Every export passes the gate
(training/federation/checks.py). The main table is participant a's final model on fedgym/a's test seeds (without
skills: the skills arm's prompt is in the measures). `federation_measures` plays each participant's final model as
adapted (skills in the prompt for the skills arm) on its own task's test seeds and reads the rounds' leakage and
bytes: `utility P`, `utility gain P` (against the local arm of the same training seed, when it has run),
`canaries found`, `membership advantage` and `attribute advantage` (largest over rounds and exports, over chance),
`bytes per round`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.experiments import Arm, Evaluation, Experiment, register


def _federation_folder(checkpoint: str) -> Path:
    """A final model lives at <run>/round-NNN/models/<participant>; the run folder holds federation.json."""
    folder = Path(checkpoint).resolve().parents[2]
    assert (folder / "federation.json").exists(), f"{checkpoint} is not a federation run's final model"
    return folder


def federation_utilities(folder: Path, seeds: list[int]) -> dict[str, float]:
    """Each participant's final model, as adapted, on its own task's `seeds` (mean composite)."""
    from training.federation.rounds import FederationSettings, utility

    summary = json.loads((folder / "federation.json").read_text())
    settings = FederationSettings(**{**summary["settings"], "utility_seeds": seeds})
    last = summary["rounds"][-1]
    skills = json.loads((folder / f"round-{last['round']:03d}" / "skills.json").read_text()) if settings.mode == "skills" else []
    return {f"utility {name}": utility(settings, model, f"fedgym/{name}", skills) for name, model in sorted(summary["models"].items())}


def federation_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures (module docstring). The local arm's utilities are cached in its run folder and read back
    by the other arms of the same training seed for `utility gain`."""
    folder = _federation_folder(checkpoint)
    cache = folder / f"utilities-{seeds[0]}-{len(seeds)}.json"
    if not cache.exists():
        cache.write_text(json.dumps(federation_utilities(folder, seeds)))
    out: dict[str, float] = json.loads(cache.read_text())
    rounds = json.loads((folder / "federation.json").read_text())["rounds"]
    out["canaries found"] = float(sum(r["canaries found"] for r in rounds))
    out["refused exports"] = float(sum(r["refused exports"] for r in rounds))
    for name in ("membership advantage", "attribute advantage"):
        out[name] = max(float(r[name]) for r in rounds)
    out["bytes per round"] = sum(float(r["bytes exchanged"]) for r in rounds) / len(rounds)
    seed = json.loads((folder / "federation_config.json").read_text())["seed"]
    local = [p for p in folder.parent.parent.glob(f"local/*-seed{seed}-*/utilities-{seeds[0]}-{len(seeds)}.json")]
    if local:
        baseline = json.loads(local[0].read_text())
        out.update({k.replace("utility", "utility gain"): out[k] - v for k, v in baseline.items() if k in out})
    return out


EXPERIMENT = register(
    Experiment(
        name="federation",
        question="Do three organisations with private catalogues of one task gain from sharing LoRA adapters (FedAvg) or "
        "distilled skills over local-only training, and do the shared artifacts leak canaries, membership or private values?",
        method="fedavg",
        arms=(
            Arm("local", "federation", {"mode": "local"}, "each participant trains on its own records; nothing is shared"),
            Arm("fedavg", "federation", {"mode": "fedavg"}, "LoRA adapters averaged by examples each round (through the gate)"),
            Arm("skills", "federation", {"mode": "skills"}, "distilled procedures merged, deduplicated and prepended to prompts"),
        ),
        shared={
            "participants": ["a", "b", "c"],
            "rounds": 3,
            "max_steps": 8,  # SFT steps per participant per round; sized to this session's CPU (2 shared cores)
            "records": 64,
            "holdout": 16,
            "batch_size": 8,
            "lora_r": 8,
            "lora_alpha": 16,
            "utility_episodes": 8,
            "probe_records": 8,
            "max_new_tokens": 48,
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 400,
        },
        evaluation=Evaluation(task="fedgym/a", dev_seeds=(50_000, 50_016), test_seeds=(100_000, 100_032), max_turns=4, max_new_tokens=48),
        tuning={"learning_rate": (1e-3,)},  # one point, the same for every arm
        measures="training.experiments.federation:federation_measures",
        train_seeds=(0, 1, 2),
        smoke={
            "rounds": 1,
            "max_steps": 1,
            "records": 4,
            "holdout": 2,
            "batch_size": 2,
            "utility_episodes": 1,
            "probe_records": 2,
            "max_new_tokens": 12,
            "max_turns": 2,
            "eval_episodes": 1,
        },
        needs_teacher=False,
    )
)
