"""Evidence 1: SFT on scripted trajectories raises the share of valid tool calls on held-out seeds.

    python -m training.evidence.sft_valid_calls --task toolgym/lookup --out var/evidence/sft   # expert demos made here
    python -m training.evidence.sft_valid_calls --task storebench/cold-snap --records episodes.jsonl \\
        --eval-seeds 100-131 --max-turns 6 --compact-tools --max-result-chars 200 --max-tokens 1024   # `python -m environments run ... --out`

StoreBench prompts do not fit the tiny model: the 29 tools' JSON schemas alone are ~8,800 tokens of its
1,024-token BPE, and one list_products result is thousands more. --compact-tools lists the tools as one
`name(args)` line each, --max-result-chars cuts results as the policies' harness does, and --max-tokens is the
supervision horizon (the first N tokens of each trajectory are trained); evaluation uses the same prompt style.

Trains the tiny model (random init) with the sft recipe, and plays held-out seeds greedily before and after:
`valid_call_rate` is the share of agent turns whose output parsed into tool calls the environment accepted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from training import run_recipe
from training.data import PromptStyle
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
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--max-tokens", type=int, default=2048, help="supervision horizon: train the first N tokens of each episode")
    parser.add_argument("--compact-tools", action="store_true", help="one name(args) line per tool instead of JSON schemas")
    parser.add_argument("--max-result-chars", type=int, default=0, help="cut tool results to N characters (0: whole)")
    parser.add_argument("--max-new-tokens", type=int, default=64)
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
    style = PromptStyle(compact_tools=args.compact_tools, max_result_chars=args.max_result_chars)
    with open(records, encoding="utf-8") as handle:  # evaluate with the system prompt the demonstrations carry
        system_prompt = (json.loads(handle.readline())["header"].get("harness") or {}).get("system_prompt") or ""
    evaluation = {"max_turns": args.max_turns, "max_new_tokens": args.max_new_tokens, "style": style, "system_prompt": system_prompt}
    before = evaluate_checkpoint(model, args.task, seeds, **evaluation)  # type: ignore[arg-type]
    config = {
        "model": model,
        "data": records,
        "max_steps": args.steps,
        "learning_rate": args.lr,
        "warmup_steps": 10,
        "batch_size": args.batch_size,
        "max_tokens": args.max_tokens,
        "compact_tools": args.compact_tools,
        "max_result_chars": args.max_result_chars,
        "output_dir": str(out / "run"),
        "save_every": 100,
    }
    result = run_recipe("sft", config, progress=True)
    after = evaluate_checkpoint(result.final_checkpoint, args.task, seeds, **evaluation)  # type: ignore[arg-type]
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
