"""Trajectory records as TypedDicts (plain dicts) against msgspec Structs, on the two hot paths that read them.

    .venv/bin/python benchmarks/records.py [--episodes 200 --steps 40 --repeat 5]

- ingest: JSON bytes -> record -> checked and completed. Dicts: orjson.loads, validate_record, normalize_record
  (what lab's general upload path does). Structs: msgspec.json.decode into typed Structs (types and defaults
  checked and filled in C), plus the ordering and call-id rules the types cannot say; then, because everything
  downstream stores and dumps dicts, msgspec.to_builtins back to a dict.
- training read: a JSONL file -> records -> each header's score and each step's source and calls read. Dicts:
  training.data.read_records (json per line) and the environments.records accessors; the same with orjson per
  line; Structs: a msgspec Decoder per line and attribute access.

Prints the median of `--repeat` timings of each, and the ratios. The figures chose environments/records.py's
TypedDicts; see its docstring.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from environments.records import Record, header_components, record_composite, record_passed  # noqa: E402
from environments.trajectory import normalize_record, validate_record  # noqa: E402


class ToolCallS(msgspec.Struct):
    id: str
    name: str
    arguments: dict[str, Any] | str


class ResultS(msgspec.Struct):
    call_id: str
    content: Any
    is_error: bool = False


class StepS(msgspec.Struct):
    index: int
    source: str
    message: Any = None
    reasoning: str | None = None
    tool_calls: list[ToolCallS] = []
    results: list[ResultS] = []
    reward: float | None = None
    sim_time_start: float | None = None
    sim_time_end: float | None = None
    events: list[dict[str, Any]] = []
    state_hash: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    latency_ms: float | None = None


class ScoreS(msgspec.Struct):
    composite: float | None = None
    passed: bool | None = None
    components: dict[str, float] = {}


class HeaderS(msgspec.Struct):
    env: str
    task: str
    source: str
    seed: int | None = None
    policy: dict[str, Any] = {}
    termination_reason: str | None = None
    score: ScoreS | None = None
    metrics: dict[str, Any] = {}


class RecordS(msgspec.Struct):
    schema_version: str
    header: HeaderS
    steps: list[StepS]


def make_records(episodes: int, steps: int) -> list[dict[str, Any]]:
    """benchmarks/ingest.py's shape: a StoreBench-like agent step with one call, its result and an event."""
    return [
        {
            "schema_version": "practicum.trajectory/1",
            "header": {
                "env": "storebench",
                "task": f"bench-{e % 10}",
                "seed": e,
                "source": "upload",
                "metrics": {"run": 0},
                "policy": {"name": "bench-agent", "kind": "external"},
                "termination_reason": "horizon_reached",
                "score": {"composite": (e % 100) / 100, "passed": e % 3 == 0, "components": {"profit": 0.5}},
            },
            "steps": [
                {
                    "index": i,
                    "source": "agent",
                    "message": f"Day {i // 4}: checking stock for SKU-{i % 37:03d} before reordering.",
                    "tool_calls": [{"id": f"call_{i}", "name": "get_inventory", "arguments": {"sku": f"SKU-{i % 37:03d}"}}],
                    "results": [
                        {"call_id": f"call_{i}", "content": {"sku": f"SKU-{i % 37:03d}", "available": i * 3 % 50}, "is_error": False}
                    ],
                    "reward": 0.0,
                    "sim_time_start": i * 15.0,
                    "sim_time_end": i * 15.0 + 5,
                    "state_hash": f"{e:08x}{i:08x}",
                    "events": [{"entity": f"sku:SKU-{i % 37:03d}", "field": "available", "op": "read"}],
                }
                for i in range(steps)
            ],
        }
        for e in range(episodes)
    ]


def ingest_dicts(payloads: list[bytes]) -> list[Record]:
    out = []
    for data in payloads:
        record = orjson.loads(data)
        assert not validate_record(record)
        out.append(normalize_record(record))
    return out


_STRUCT_DECODER = msgspec.json.Decoder(RecordS)


def _struct_rules_ok(record: RecordS) -> bool:
    """What validate_record checks beyond types: steps in order, results answering a call of their step."""
    for position, step in enumerate(record.steps):
        if step.index != position:
            return False
        ids = {call.id for call in step.tool_calls}
        if ids and any(result.call_id not in ids for result in step.results):
            return False
    return True


def ingest_structs(payloads: list[bytes]) -> list[RecordS]:
    out = []
    for data in payloads:
        record = _STRUCT_DECODER.decode(data)
        assert _struct_rules_ok(record)
        out.append(record)
    return out


def ingest_structs_to_dicts(payloads: list[bytes]) -> list[Any]:
    return [msgspec.to_builtins(record) for record in ingest_structs(payloads)]


def _read_dicts(records: list[Record]) -> float:
    total = 0.0
    for record in records:
        total += record_composite(record, 0.0) + bool(record_passed(record)) + len(header_components(record["header"]))
        for step in record["steps"]:
            total += (step["source"] == "agent") + len(step["tool_calls"])
    return total


def read_dicts_json(path: str) -> float:
    from training.data import read_records

    return _read_dicts(read_records(path))


def read_dicts_orjson(path: str) -> float:
    with open(path, "rb") as handle:
        return _read_dicts([orjson.loads(line) for line in handle if line.strip()])


def read_structs(path: str) -> float:
    with open(path, "rb") as handle:
        records = [_STRUCT_DECODER.decode(line) for line in handle if line.strip()]
    total = 0.0
    for record in records:
        score = record.header.score or ScoreS()
        total += (score.composite if score.composite is not None else 0.0) + bool(score.passed) + len(score.components)
        for step in record.steps:
            total += (step.source == "agent") + len(step.tool_calls)
    return total


def _median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    records = make_records(args.episodes, args.steps)
    payloads = [orjson.dumps(r) for r in records]
    assert ingest_structs_to_dicts(payloads[:3]) and ingest_dicts(payloads[:3])
    n_steps = args.episodes * args.steps
    print(
        f"{args.episodes} episodes x {args.steps} steps ({n_steps} steps, {sum(map(len, payloads)) / 1e6:.1f} MB), median of {args.repeat}"
    )

    ingest = {
        "dicts (orjson + validate_record + normalize_record)": _median_seconds(lambda: ingest_dicts(payloads), args.repeat),
        "structs (msgspec decode + order/call-id rules)": _median_seconds(lambda: ingest_structs(payloads), args.repeat),
        "structs, then to_builtins (dicts downstream)": _median_seconds(lambda: ingest_structs_to_dicts(payloads), args.repeat),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "records.jsonl")
        with open(path, "wb") as handle:
            handle.writelines(p + b"\n" for p in payloads)
        assert read_dicts_json(path) == read_dicts_orjson(path) == read_structs(path)
        reading = {
            "dicts (read_records: json per line, accessors)": _median_seconds(lambda: read_dicts_json(path), args.repeat),
            "dicts (orjson per line, accessors)": _median_seconds(lambda: read_dicts_orjson(path), args.repeat),
            "structs (msgspec Decoder per line, attributes)": _median_seconds(lambda: read_structs(path), args.repeat),
        }
    for title, figures in (("ingest", ingest), ("training read", reading)):
        base = next(iter(figures.values()))
        print(f"\n{title}:")
        for name, seconds in figures.items():
            print(f"  {name:55s} {seconds * 1000:8.1f} ms  {n_steps / seconds / 1000:7.0f} k steps/s  x{base / seconds:.2f}")


if __name__ == "__main__":
    main()
