"""Evidence 1: SFT on scripted trajectories raises the share of valid tool calls on held-out seeds.

    python -m training.evidence.sft_valid_calls --task toolgym/lookup --out var/evidence/sft   # expert demos made here
    python -m training.evidence.sft_valid_calls --task storebench/supplier-collapse --records episodes.jsonl \\
        --eval-seeds 100-131 --max-turns 6                                                     # from `python -m environments run ... --out`

Trains the tiny model (random init) with the sft recipe, and plays held-out seeds greedily before and after:
`valid_call_rate` is the share of agent turns whose output parsed into tool calls the environment accepted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from training import run_recipe
from training.evidence.common import evaluate_checkpoint, parse_range, write_records
from training.tiny import build_tiny_model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="toolgym/lookup")
    parser.add_argument("--records", help="JSONL of demonstration records; default: the toolgym expert on --train-seeds")
    parser.add_argument("--train-seeds", default="0-199")
    parser.add_argument("--eval-seeds", default="100000-100063")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="var/evidence/sft")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = args.records
    if records is None:
        from environments.toolgym.anchors import ExpertPolicy
        from training.scripted import scripted_episodes

        records = str(write_records(out / "demos.jsonl", scripted_episodes(ExpertPolicy(), args.task, parse_range(args.train_seeds))))
    model = str(build_tiny_model(out / "init", seed=0))
    seeds = parse_range(args.eval_seeds)
    before = evaluate_checkpoint(model, args.task, seeds, max_turns=args.max_turns)
    config = {
        "model": model,
        "data": records,
        "max_steps": args.steps,
        "learning_rate": 3e-3,
        "warmup_steps": 10,
        "batch_size": 8,
        "output_dir": str(out / "run"),
        "save_every": 100,
    }
    result = run_recipe("sft", config, progress=True)
    after = evaluate_checkpoint(result.final_checkpoint, args.task, seeds, max_turns=args.max_turns)
    losses = [json.loads(line)["loss"] for line in (out / "run" / "metrics.jsonl").read_text().splitlines()]
    summary = {
        "task": args.task,
        "steps": result.steps,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "before": before,
        "after": after,
        "checkpoint": result.final_checkpoint,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
