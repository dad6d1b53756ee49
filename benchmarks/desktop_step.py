"""Desktop step latency, without and with a 1280 x 800 screenshot: every step of the anchors' episodes, on one core.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/desktop_step.py            # seeds 1000-1002, drift none and high
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/desktop_step.py --seeds 5

The targets are under 5 ms a step (mean and 95th percentile) for text-only steps (the action, the new widget tree,
its accessibility text and the state hash) and under 50 ms for a step that also renders the screen
(`observe(screenshot=true)` after each action: tree, PNG paint and encode, its sha256). Figures are CPU time of this
process (time.process_time) so that a loaded machine does not inflate them; `--wall` gives wall-clock time. The
first screenshot of a process also loads the fonts and fills the glyph cache; it is reported on its own line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.core import ToolCall  # noqa: E402
from environments.desktop.tasks import TEMPLATES  # noqa: E402
from environments.policies import make_policy  # noqa: E402
from environments.registry import make  # noqa: E402

ANCHORS = ("gui-only", "cli-preferring", "random-valid")
Clock = Callable[[], float]


def text_steps(seeds: list[int], clock: Clock, screenshots: list[float] | None = None) -> dict[str, list[float]]:
    """Seconds per env.step, by tool, over every anchor x task x seed x drift level; with `screenshots`, each action is
    followed by an observe(screenshot=true) timed into that list instead."""
    timings: dict[str, list[float]] = {}
    for seed in seeds:
        for task in TEMPLATES:
            for drift in ("none", "high"):
                for anchor in ANCHORS:
                    env = make(f"desktop/{task}", seed=seed, options={"drift": drift})
                    policy = make_policy(anchor, env, seed)
                    history: list[dict] = [{"index": 0, "source": "env", "results": [], "meta": {"observation": env.reset().data}}]
                    while not env.done:
                        call = policy.act(history, env.tools()).tool_calls[0]
                        started = clock()
                        result = env.step(call)
                        timings.setdefault(call.name, []).append(clock() - started)
                        if screenshots is not None and not env.done:
                            started = clock()
                            env.step(ToolCall(id="shot", name="observe", arguments={"screenshot": True}))
                            screenshots.append(clock() - started)
                        history.append({"index": len(history), "source": "agent", "results": [{"content": result.content}]})
    return timings


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{name:<28} {len(samples):>6} {statistics.mean(samples) * 1e3:>9.3f} {ordered[int(0.95 * (len(ordered) - 1))] * 1e3:>9.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--wall", action="store_true", help="wall-clock instead of CPU time")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    timings = text_steps(list(range(1000, 1000 + args.seeds)), clock)
    print(f"{'tool':<28} {'calls':>6} {'mean ms':>9} {'p95 ms':>9}")
    for name, samples in sorted(timings.items()):
        print(row(name, samples))
    print(row("all text-only steps", [t for ts in timings.values() for t in ts]) + "  (target < 5 ms)")
    shots: list[float] = []
    text_steps([1000], clock, screenshots=shots)  # the policies see the same screens: the extra observe only renders
    print(row("first screenshot (cold)", shots[:1]))
    print(row("screenshot steps", shots[1:]) + "  (target < 50 ms)")


if __name__ == "__main__":
    main()
