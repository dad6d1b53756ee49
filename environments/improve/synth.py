"""Synthesised improvement trajectories, checked before they are written: training data for improve-rounds.

    python -m environments.improve.synth --tasks improve-rounds/digits,improve-rounds/tune --seeds 10000-10031 \\
        --kind chain --out var/arex-chain.jsonl          # round after round, each scored better than the last
    python -m environments.improve.synth ... --kind final-only --out var/arex-final.jsonl   # the last solution alone

Each record is a canonical trajectory record (environments/trajectory.py) of the `chain` or `final-only` anchor
(rounds_anchors.py), the shape training/data.py reads. A record is kept only when it verifies: it replays to
the same state hashes and score, and its round scores rise strictly (chain: at least two rounds; final-only:
exactly one). What was dropped, and why, is returned and printed, never silently lost.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from environments.core import Env, EnvError
from environments.improve.rounds_anchors import chain, final_only
from environments.records import Record, record_score
from environments.registry import get_task, make
from environments.replay import replay_record
from environments.seeds import SeedError, seeds_parse

KINDS = {"chain": chain, "final-only": final_only}


def record_problem(record: Record, kind: str) -> str | None:
    """Why a synthesised record is not a valid example of `kind`, or None."""
    details = record_score(record).get("details") or {}
    scores = details.get("round_scores") or []
    if kind == "chain" and len(scores) < 2:
        return f"{len(scores)} rounds: a chain needs at least two"
    if kind == "final-only" and len(scores) != 1:
        return f"{len(scores)} rounds: final-only has exactly one"
    if any(b <= a for a, b in zip(scores, scores[1:], strict=False)):
        return f"round scores do not rise strictly: {scores}"
    replay = replay_record(record)
    if not replay["ok"]:
        return f"replay diverged: {replay['divergence']}"
    return None


def synthesise(
    task_ids: Iterable[str], seeds: Iterable[int], *, kind: str, harness: Callable[[Env], dict[str, Any]] | None = None
) -> tuple[list[Record], list[str]]:
    """(verified records, one line per dropped episode). `harness(env)` fills the record's harness header (the
    system prompt a sampler shows), so training sees what evaluation will."""
    from environments.runner import run_episode

    if kind not in KINDS:
        raise EnvError("bad_kind", f"kind: {kind!r} is not one of {sorted(KINDS)}")
    kept, dropped = [], []
    seeds = list(seeds)
    for task_id in task_ids:
        if get_task(task_id).env != "improve-rounds":
            raise EnvError("unknown_task", f"tasks: {task_id!r} is not an improve-rounds task")
        for seed in seeds:
            env = make(task_id, seed)
            record = run_episode(env, KINDS[kind](env, seed), harness=harness(env) if harness else None)
            if problem := record_problem(record, kind):
                dropped.append(f"{task_id} seed {seed}: {problem}")
            else:
                kept.append(record)
    return kept, dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m environments.improve.synth", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", required=True, help="comma-separated improve-rounds task ids")
    parser.add_argument("--seeds", required=True, help="for example 10000-10031 (at most the seeds module's limit)")
    parser.add_argument("--kind", choices=sorted(KINDS), default="chain")
    parser.add_argument("--out", required=True, help="JSONL file to write")
    args = parser.parse_args(argv)
    try:
        seeds = seeds_parse(args.seeds)
        records, dropped = synthesise([t for t in args.tasks.split(",") if t], seeds, kind=args.kind)
    except (SeedError, EnvError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    Path(args.out).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    for line in dropped:
        print(f"dropped: {line}", file=sys.stderr)
    print(f"{len(records)} {args.kind} records -> {args.out} ({len(dropped)} dropped)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
