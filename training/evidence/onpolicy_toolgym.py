"""Evidence 2 and 3: GRPO raises mean reward on toolgym/guess; OPD moves a student toward the GRPO-trained teacher.

    python -m training.evidence.onpolicy_toolgym --out var/evidence/onpolicy       # ~10 min on 2 shared CPU cores

1. Format-only SFT: the tiny model (random init) imitates a *random* player of toolgym/guess, so it learns the
   tool-call format and says random words; it cannot learn the secret word, which no demonstration favours.
2. GRPO from that checkpoint: the reward alone must reveal the secret.
3. OPD: the format-only SFT checkpoint (student) distils from the GRPO checkpoint (teacher).
4. self_distill (hindsight teacher, live weights) for a few steps on toolgym/lookup from the same SFT start,
   to show the recipe running end to end (its reverse KL curve is printed; no reward claim is made).
Prints held-out greedy figures and the training curves; everything lands in OUT/summary.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from training import run_recipe
from training.evidence.common import evaluate_checkpoint, parse_range, write_records

TASK = "toolgym/guess"


def _curve(path: Path, key: str) -> list[float]:
    return [round(row[key], 4) for row in map(json.loads, path.read_text().splitlines()) if key in row]


def _format_only_sft(out: Path, steps: int) -> str:
    from environments.toolgym.anchors import RandomPolicy
    from training.scripted import scripted_episode
    from training.tiny import build_tiny_model

    demos = write_records(out / "demos.jsonl", [scripted_episode(RandomPolicy(seed), TASK, seed) for seed in range(200)])
    model = str(build_tiny_model(out / "init", seed=0))
    config = {"model": model, "data": str(demos), "max_steps": steps, "learning_rate": 3e-3, "warmup_steps": 5, "batch_size": 8}
    return str(run_recipe("sft", {**config, "output_dir": str(out / "sft")}, progress=True).final_checkpoint)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="var/evidence/onpolicy")
    parser.add_argument("--sft-steps", type=int, default=60)
    parser.add_argument("--grpo-steps", type=int, default=20)
    parser.add_argument("--opd-steps", type=int, default=15)
    parser.add_argument("--self-distill-steps", type=int, default=5)
    parser.add_argument("--eval-seeds", default="100000-100063")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = parse_range(args.eval_seeds)
    rollout: dict[str, Any] = {
        "task": TASK,
        "max_turns": 2,
        "max_new_tokens": 32,
        "eval_every": 5,
        "eval_episodes": 32,
        "eval_seed_start": 200_000,
        "temperature": 0.7,
    }

    def evaluate(path: str) -> dict[str, float]:
        return evaluate_checkpoint(path, TASK, seeds, max_turns=2, max_new_tokens=32)

    start = _format_only_sft(out, args.sft_steps)
    summary: dict[str, Any] = {"start": start, "start_eval": evaluate(start)}

    grpo_config = {**rollout, "model": start, "tasks_per_step": 8, "group_size": 8, "learning_rate": 2e-4, "aggregation": "seq-mean"}
    grpo = run_recipe("grpo", {**grpo_config, "max_steps": args.grpo_steps, "output_dir": str(out / "grpo")}, progress=True)
    teacher = str(grpo.final_checkpoint)
    summary["grpo"] = {
        "eval": evaluate(teacher),
        "reward_curve": _curve(out / "grpo" / "metrics.jsonl", "reward_mean"),
        "eval_reward_curve": _curve(out / "grpo" / "metrics.jsonl", "eval_reward_mean"),
        "valid_call_curve": _curve(out / "grpo" / "metrics.jsonl", "valid_call_rate"),
    }

    opd_config = {**rollout, "model": start, "teacher": teacher, "tasks_per_step": 8, "group_size": 2, "learning_rate": 2e-4}
    opd = run_recipe("opd", {**opd_config, "max_steps": args.opd_steps, "output_dir": str(out / "opd")}, progress=True)
    summary["opd"] = {
        "eval": evaluate(str(opd.final_checkpoint)),
        "reverse_kl_curve": _curve(out / "opd" / "metrics.jsonl", "reverse_kl"),
        "reward_curve": _curve(out / "opd" / "metrics.jsonl", "reward_mean"),
        "eval_reward_curve": _curve(out / "opd" / "metrics.jsonl", "eval_reward_mean"),
    }

    distill = {
        **rollout,
        "task": "toolgym/lookup",
        "max_turns": 3,
        "model": start,
        "tasks_per_step": 4,
        "learning_rate": 2e-4,
        "eval_every": 0,
        "eval_episodes": 8,
        "max_steps": args.self_distill_steps,
        "output_dir": str(out / "self_distill"),
    }
    run_recipe("self_distill", distill, progress=True)
    summary["self_distill"] = {key: _curve(out / "self_distill" / "metrics.jsonl", key) for key in ("loss", "reward_mean")}

    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
