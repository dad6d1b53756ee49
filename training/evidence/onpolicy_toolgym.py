"""Evidence 2 and 3: GRPO raises mean reward on toolgym; OPD moves a student toward a trained teacher.

    python -m training.evidence.onpolicy_toolgym --sft var/evidence/sft --out var/evidence/onpolicy

Uses the sft evidence run's checkpoints: the early one (step 100) is the starting policy for GRPO and the OPD
student; the final one is the OPD teacher. Prints held-out greedy figures before and after, and the training
curves (sampled reward for GRPO; sampled reverse KL and reward for OPD).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from training import run_recipe
from training.evidence.common import evaluate_checkpoint, parse_range


def _curve(path: Path, key: str) -> list[float]:
    return [round(row[key], 4) for row in map(json.loads, path.read_text().splitlines()) if key in row]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sft", default="var/evidence/sft")
    parser.add_argument("--task", default="toolgym/lookup")
    parser.add_argument("--start-step", type=int, default=100)
    parser.add_argument("--grpo-steps", type=int, default=20)
    parser.add_argument("--opd-steps", type=int, default=20)
    parser.add_argument("--eval-seeds", default="100000-100063")
    parser.add_argument("--out", default="var/evidence/onpolicy")
    parser.add_argument("--only", choices=["grpo", "opd"], default=None)
    args = parser.parse_args()
    out, sft = Path(args.out), Path(args.sft)
    start = str(sft / "run" / f"step-{args.start_step:06d}")
    teacher = str(sorted((sft / "run").glob("step-*"))[-1])  # the sft run's last checkpoint
    seeds = parse_range(args.eval_seeds)
    common = {"task": args.task, "tasks_per_step": 4, "max_new_tokens": 48, "eval_every": 0, "eval_episodes": 8, "eval_seed_start": 200_000}
    summary: dict[str, object] = {"start": start, "teacher": teacher, "start_eval": evaluate_checkpoint(start, args.task, seeds)}
    if args.only in (None, "grpo"):
        grpo = run_recipe(
            "grpo",
            {
                **common,
                "model": start,
                "group_size": 8,
                "max_steps": args.grpo_steps,
                "learning_rate": 1e-3,
                "output_dir": str(out / "grpo"),
            },
            progress=True,
        )
        summary["grpo"] = {
            "eval": evaluate_checkpoint(grpo.final_checkpoint, args.task, seeds),
            "reward_curve": _curve(out / "grpo" / "metrics.jsonl", "reward_mean"),
        }
    if args.only in (None, "opd"):
        opd_config = {
            **common,
            "model": start,
            "teacher": teacher,
            "group_size": 2,
            "max_steps": args.opd_steps,
            "learning_rate": 1e-3,
            "output_dir": str(out / "opd"),
        }
        opd = run_recipe("opd", opd_config, progress=True)
        summary["teacher_eval"] = evaluate_checkpoint(teacher, args.task, seeds)
        summary["opd"] = {
            "eval": evaluate_checkpoint(opd.final_checkpoint, args.task, seeds),
            "reverse_kl_curve": _curve(out / "opd" / "metrics.jsonl", "reverse_kl"),
            "reward_curve": _curve(out / "opd" / "metrics.jsonl", "reward_mean"),
        }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
