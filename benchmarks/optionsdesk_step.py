"""Options desk step latency: per tool, over a regime-rule episode and a read-heavy script, on one core.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/optionsdesk_step.py            # seeds 1000-1002, out-of-sample
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/optionsdesk_step.py --seeds 5   # more seeds

The target is under 10 ms a step (mean and 95th percentile). Market generation is timed apart: it runs once per
seed (cached) when the environment is made, not per step. Figures are CPU time of this process (time.process_time),
so that a loaded shared machine (other processes preempting this one) does not inflate them; `--wall` gives
wall-clock time instead.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.core import ToolCall  # noqa: E402
from environments.optionsdesk.market import market_for  # noqa: E402
from environments.policies import make_policy  # noqa: E402
from environments.registry import make  # noqa: E402

READS = [
    ToolCall("market_snapshot", {}),
    ToolCall("option_chain", {"underlying": "IDX"}),
    ToolCall("option_chain", {"underlying": "ALPH", "expiry": "all", "moneyness_min": 0.8, "moneyness_max": 1.2, "limit": 120}),
    ToolCall("portfolio", {}),
    ToolCall("read_news", {"days": 10}),
]
TRADES = [
    ToolCall("open_strategy", {"underlying": "IDX", "strategy": "iron_condor", "risk_budget": 0.01}),
    ToolCall("open_strategy", {"underlying": "BRCK", "strategy": "long_strangle", "expiry": "quarter", "risk_budget": 0.01}),
]


def run(seeds: list[int], clock=time.process_time) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    timings: dict[str, list[float]] = {}
    for seed in seeds:
        started = clock()
        market_for(seed)
        timings.setdefault("(market generation, once per seed)", []).append(clock() - started)
        env = make("optionsdesk/oos", seed=seed)
        policy = make_policy("regime-rule", env, seed)
        history: list[dict] = [{"index": 0, "source": "env", "results": []}]
        day = 0
        while not env.done:
            calls = [c for c in policy.act(history, env.tools()).tool_calls]
            if day % 5 == 2:  # a read-heavy, trade-heavy day now and then
                calls = READS + TRADES + calls
            for call in calls:
                started = clock()
                result = env.step(call)
                timings.setdefault(call.name, []).append(clock() - started)
                history = [history[0], {"index": len(history), "source": "agent", "results": [{"content": result.content}]}]
                day += call.name == "next_day"
                if env.done:
                    break
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--wall", action="store_true", help="wall-clock instead of CPU time")
    args = parser.parse_args()
    timings = run(list(range(1000, 1000 + args.seeds)), time.perf_counter if args.wall else time.process_time)
    steps = [t for name, ts in timings.items() if not name.startswith("(") for t in ts]
    print(f"{'tool':<36} {'calls':>6} {'mean ms':>9} {'p95 ms':>9}")
    for name, ts in sorted(timings.items()):
        ordered = sorted(ts)
        print(f"{name:<36} {len(ts):>6} {statistics.mean(ts) * 1e3:>9.2f} {ordered[int(0.95 * (len(ordered) - 1))] * 1e3:>9.2f}")
    ordered = sorted(steps)
    p95 = ordered[int(0.95 * (len(ordered) - 1))] * 1e3
    print(f"{'all steps':<36} {len(steps):>6} {statistics.mean(steps) * 1e3:>9.2f} {p95:>9.2f}  (target < 10 ms)")


if __name__ == "__main__":
    main()
