"""Search scaling: how many searches (and opens, and calls) a policy spends as questions need more hops.

    python -m environments.phantom.scaling                                  # every anchor, phantom/mixed-dev, 200 seeds
    python -m environments.phantom.scaling --task phantom/mixed-test --seeds 400 --anchors multisearch,keyword

A row per hop count (the question's `hops`: articles per chain; a comparison has two chains), a column group per
policy: episodes, mean searches, opens and calls per episode, searches per supporting article (how the cost grows
against what the question needs: 1.0 is one search per article read) and exact match. `mixed` tasks draw 1-4
hops from one universe, so hop count is the only knob that varies between rows (comparisons come with every
count alike). The training experiment `phantom_transfer` reads model episodes with the same `episode_row`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable

from environments.phantom.anchors import ANCHOR_NAMES
from environments.records import Record, header_components

COLUMNS = ("searches", "opens", "calls", "searches_per_article", "exact_match")


def episode_row(record: Record) -> dict[str, float]:
    """One episode's counts: its agent's calls by tool, and the question's hops and supporting articles."""
    from environments.phantom.env import PhantomEnv
    from environments.registry import make

    header = record["header"]
    seed = header["seed"]
    assert seed is not None, "search scaling replays a seeded episode"
    env = make(f"{header['env']}/{header['task']}", int(seed))  # the universe is cached: cheap
    assert isinstance(env, PhantomEnv), f"search scaling reads phantom episodes, got {header['env']}"
    question = env.question
    names = [call["name"] for step in record["steps"] if step.get("source") == "agent" for call in step.get("tool_calls") or []]
    searches = float(names.count("search"))
    return {
        "hops": float(question.hops),
        "support": float(len(question.support)),
        "searches": searches,
        "opens": float(names.count("open_article")),
        "calls": float(len(names)),
        "searches_per_article": searches / len(question.support),
        "exact_match": float(header_components(header).get("exact_match", 0.0)),
    }


def scaling_table(rows: Iterable[dict[str, float]]) -> dict[int, dict[str, float]]:
    """{hops: {"episodes": n, column: mean over its episodes}} for every hop count seen, in order."""
    groups: dict[int, list[dict[str, float]]] = {}
    for row in rows:
        groups.setdefault(int(row["hops"]), []).append(row)
    return {
        hops: {"episodes": float(len(group)), **{c: statistics.mean(r[c] for r in group) for c in COLUMNS}}
        for hops, group in sorted(groups.items())
    }


def anchor_rows(anchor: str, task: str, seeds: Iterable[int]) -> list[dict[str, float]]:
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    rows = []
    for seed in seeds:
        env = make(task, seed)
        rows.append(episode_row(run_episode(env, make_policy(anchor, env, seed))))
    return rows


def table_markdown(tables: dict[str, dict[int, dict[str, float]]]) -> str:
    """One line per (hop count, policy): episodes and each column's mean."""
    lines = ["| hops | policy | episodes | " + " | ".join(COLUMNS) + " |", "| --- " * (3 + len(COLUMNS)) + "|"]
    for hops in sorted({h for table in tables.values() for h in table}):
        for policy, table in tables.items():
            if hops in table:
                cells = table[hops]
                values = " | ".join(f"{cells[c]:.2f}" for c in COLUMNS)
                lines.append(f"| {hops} | {policy} | {int(cells['episodes'])} | {values} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import environments.phantom  # noqa: F401  (registers the tasks and anchors)

    parser = argparse.ArgumentParser(prog="python -m environments.phantom.scaling", description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="phantom/mixed-dev")
    parser.add_argument("--seeds", type=int, default=200, help="seeds 0..N-1")
    parser.add_argument("--anchors", default=",".join(ANCHOR_NAMES))
    args = parser.parse_args(argv)
    anchors = [a for a in args.anchors.split(",") if a]
    unknown = [a for a in anchors if a not in ANCHOR_NAMES]
    if unknown or args.seeds < 1:
        print(f"unknown anchor(s) {unknown}; anchors are {', '.join(ANCHOR_NAMES)}" if unknown else "--seeds must be >= 1", file=sys.stderr)
        return 2
    tables = {a: scaling_table(anchor_rows(a, args.task, range(args.seeds))) for a in anchors}
    print(f"{args.task}, seeds 0-{args.seeds - 1}: means per episode by the question's hop count.\n")
    print(table_markdown(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
