"""StoreBench benchmark (not a test): smart-triage over the full simulated year, then its replay, per engine.

    .venv/bin/python benchmarks/storebench.py [--seed 111] [--repeat 3] [--versions 1.0.0,2.0.0]

For each engine version it prints wall time, environment steps/s, simulated days/s and the cost per step of:
the episode (policy + environment + record building, as the runner does it), the environment alone replaying
the recorded actions without a policy, with and without the state hash after every step, and a full
verified replay (state-hash chain checked at every step). Best of --repeat runs, the engines taking turns, pinned to one
core; the episode's CPU time too (on a shared machine the wall time measures the neighbours), and the last version's
ratio to the first.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.core import ToolCall  # noqa: E402
from environments.registry import make  # noqa: E402
from environments.replay import replay_record  # noqa: E402
from environments.runner import make_policy, run_episode  # noqa: E402

TASK = "storebench/full-year"


LABELS = ("episode", "env + hash", "env, no hash", "verified replay")


def bench_once(version: str, seed: int, times: dict[str, list[float]], episode_cpu: list[float]) -> dict[str, Any]:
    """One run of each measure on `version`, appended to `times`; returns the episode's record."""
    env = make(TASK, seed=seed, version=version)
    started, cpu = time.perf_counter(), time.process_time()
    record = run_episode(env, make_policy("smart-triage", env, seed))
    times["episode"].append(time.perf_counter() - started)
    episode_cpu.append(time.process_time() - cpu)
    calls = [ToolCall(name=c["name"], arguments=c["arguments"]) for s in record["steps"][1:] for c in s["tool_calls"]]
    for label, hashing in (("env + hash", True), ("env, no hash", False)):
        fresh = make(TASK, seed=seed, version=version)
        started = time.perf_counter()
        for call in calls:
            fresh.step(call)
            if hashing:
                fresh.state_hash()
        times[label].append(time.perf_counter() - started)
    started = time.perf_counter()
    report = replay_record(record)
    times["verified replay"].append(time.perf_counter() - started)
    assert report["ok"], report
    record["days"] = env.world.day  # type: ignore[attr-defined]
    return record


def print_table(version: str, seed: int, record: dict[str, Any], times: dict[str, list[float]], episode_cpu: list[float]) -> None:
    steps, days = len(record["steps"]) - 1, record["days"]
    print(f"engine {version}, {TASK} seed {seed}: {steps} steps, {days} simulated days, composite {record['header']['score']['composite']}")
    for label in LABELS:
        best = min(times[label])
        print(f"  {label:18s} {best:6.2f} s {steps / best:8.0f} steps/s {days / best:7.1f} sim days/s {best / steps * 1e6:7.0f} us/step")
    print(f"  {'episode CPU time':18s} {min(episode_cpu):6.2f} s (process time: what the wall time is when the machine is not shared)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=111)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--versions", default="1.0.0,2.0.0")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the goal states
    versions = args.versions.split(",")
    times: dict[str, dict[str, list[float]]] = {v: {label: [] for label in LABELS} for v in versions}
    cpu: dict[str, list[float]] = {v: [] for v in versions}
    records: dict[str, dict[str, Any]] = {}
    for _ in range(args.repeat):  # the engines take turns, so a busy spell on a shared machine falls on both
        for version in versions:
            records[version] = bench_once(version, args.seed, times[version], cpu[version])
    for version in versions:
        print_table(version, args.seed, records[version], times[version], cpu[version])
    if len(versions) > 1:
        first, last = versions[0], versions[-1]
        wall0, wall1 = min(times[first]["episode"]), min(times[last]["episode"])
        cpu0, cpu1 = min(cpu[first]), min(cpu[last])
        print(f"full-year episode, {last} / {first}: {wall1 / wall0:.2f}x wall ({wall1:.2f} s / {wall0:.2f} s), {cpu1 / cpu0:.2f}x CPU")


if __name__ == "__main__":
    main()
