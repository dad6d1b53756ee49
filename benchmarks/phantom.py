"""Phantom worlds benchmark: generation speed, search latency, episode throughput and the anchor calibration table.

    .venv/bin/python benchmarks/phantom.py                  # speed figures (10,000-article universe)
    .venv/bin/python benchmarks/phantom.py --calibrate 100  # + anchors on every dev task, 100 seeds each

Figures are wall-clock on whatever machine runs it; the README quotes one run on the 2-core dev box.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.phantom.calibration import calibrate, table_markdown  # noqa: E402
from environments.phantom.universe import Universe, UniverseSpec  # noqa: E402


def timed(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    print(f"  {label:<38} {time.perf_counter() - start:8.3f} s")
    return value


def speed(articles: int, questions: int, searches: int) -> None:
    print(f"universe of {articles:,} articles (distractors 2, alias rate 0.5)")
    start = time.perf_counter()
    universe = timed("world + corpus", Universe, UniverseSpec("train", 0, articles, 2, 0.5))
    asked = timed(
        f"{questions:,} questions (1-4 hops)",
        lambda: [universe.question(random.Random(i), hops=1 + i % 4, comparison_rate=0.2, constraint_rate=0.2) for i in range(questions)],
    )
    timed("BM25 index (rank_bm25)", lambda: universe.index)
    print(f"  {'total':<38} {time.perf_counter() - start:8.3f} s")
    words = sum(len(a.text.split()) for a in universe.articles)
    print(f"  corpus: {words:,} words, {words / articles:.0f} per article; {len(universe.world.entities):,} entities")
    start = time.perf_counter()
    for question in asked[:searches]:
        universe.search(question.text, 5)
    print(f"  search latency (question as query)     {1000 * (time.perf_counter() - start) / searches:8.2f} ms")


def calibrate_all(seeds: int) -> None:
    print()
    print(table_markdown(calibrate(workers=2, seeds=seeds)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=1_000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--calibrate", type=int, default=0, metavar="SEEDS", help="also run the anchors on every dev task")
    args = parser.parse_args()
    speed(args.articles, args.questions, args.searches)
    if args.calibrate:
        calibrate_all(args.calibrate)


if __name__ == "__main__":
    main()
