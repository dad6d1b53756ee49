"""Rule diagnoses verified by replay on StoreBench failures: how often a correction beats the retry.

    .venv/bin/python benchmarks/diagnosis.py [--policy random-valid] [--anchor smart-triage] [--tasks 6] [--seed 0]

For each of the first N evaluation scenarios: play the failing policy, find the pivotal step with the anchor,
propose the anchor's first state-changing call there, then verify it by replay (corrected branch vs the
original-action retry, the same policy continuing with the same seed). Prints a before/after table.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.diagnosis.branching import verify_correction  # noqa: E402
from environments.diagnosis.rules import rule_diagnose  # noqa: E402
from environments.registry import make, task_set  # noqa: E402
from environments.runner import make_policy, run_episode  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="random-valid")
    parser.add_argument("--anchor", default="smart-triage")
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tasks = [t for t in task_set("storebench/eval") if "year" not in t.key][: args.tasks]
    print(f"{'task':28} {'steps':>5} {'pivot':>5} {'category':18} {'correction':26} {'retry':>6} {'fixed':>6} verified")
    verified = 0
    started = time.perf_counter()
    for task in tasks:
        env = make(task.id, seed=args.seed)
        record = run_episode(env, make_policy(args.policy, env, args.seed))
        if record["header"]["score"]["passed"]:
            print(f"{task.key:28} passed already; skipped")
            continue
        answer = rule_diagnose(record, anchor_factory=lambda e, s: make_policy(args.anchor, e, s), seeds=(args.seed,))
        if answer.proposal is None:
            print(f"{task.key:28} {len(record['steps']):5} no diagnosis: {answer.error}")
            continue
        p = answer.proposal
        outcome = verify_correction(
            record,
            step_index=p.step_index,
            correction=p.correction,
            policy_factory=lambda e, s: make_policy(args.policy, e, s),
            continuation_seed=args.seed,
        )
        verified += outcome.verified
        print(
            f"{task.key:28} {len(record['steps']):5} {p.step_index:5} {p.category:18} {p.correction['name']:26} "
            f"{outcome.retry.composite:6.3f} {outcome.corrected.composite:6.3f} {outcome.verified}"
        )
    print(f"verified {verified}/{len(tasks)} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
