"""StoreBench benchmark (not a test): smart-triage over the full simulated year, then its replay.

    .venv/bin/python benchmarks/storebench.py [--seed 111] [--repeat 3]

Prints environment steps/s, simulated days/s and wall time for the episode (policy + environment +
record building, as the runner does it), the environment alone (replaying the recorded actions without
a policy), and a full verified replay (state-hash chain checked at every step). Best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.core import ToolCall  # noqa: E402
from environments.registry import make  # noqa: E402
from environments.replay import replay_record  # noqa: E402
from environments.runner import make_policy, run_episode  # noqa: E402

TASK = "storebench/full-year"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=111)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the goal states
    episode, env_only, replay = [], [], []
    for _ in range(args.repeat):
        env = make(TASK, seed=args.seed)
        started = time.perf_counter()
        record = run_episode(env, make_policy("smart-triage", env, args.seed))
        episode.append(time.perf_counter() - started)
        calls = [ToolCall(name=c["name"], arguments=c["arguments"]) for s in record["steps"][1:] for c in s["tool_calls"]]
        fresh = make(TASK, seed=args.seed)
        started = time.perf_counter()
        for call in calls:
            fresh.step(call)
            fresh.state_hash()
        env_only.append(time.perf_counter() - started)
        started = time.perf_counter()
        report = replay_record(record)
        replay.append(time.perf_counter() - started)
        assert report["ok"], report
    steps = len(record["steps"]) - 1
    days = env.world.day
    print(f"task {TASK} seed {args.seed}: {steps} steps, {days} simulated days, composite {record['header']['score']['composite']}")
    for label, times in (("episode (smart-triage + env + record)", episode), ("environment alone", env_only), ("verified replay", replay)):
        best = min(times)
        print(f"{label:40s} {best:6.2f} s   {steps / best:8.0f} steps/s   {days / best:7.1f} sim days/s")


if __name__ == "__main__":
    main()
