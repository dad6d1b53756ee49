"""Exact replay: fresh processes, other hash seeds, four threads at once, snapshot/restore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from environments.core import ToolCall, chain_hash
from environments.registry import make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode

ROOT = Path(__file__).resolve().parents[2]


def _record(task: str, seed: int, policy: str = "smart-triage", max_steps: int | None = None) -> dict:
    env = make(task, seed=seed)
    return run_episode(env, make_policy(policy, env, seed), max_steps=max_steps)


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "environments", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_a_record_replays_in_a_fresh_process_with_another_hash_seed(tmp_path: Path) -> None:
    path = tmp_path / "episodes.jsonl"
    records = [_record("storebench/quality-recall", 21), _record("storebench/heat-wave", 22, "random-valid", max_steps=300)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = _cli("replay", str(path), env_extra={"PYTHONHASHSEED": "4242"})
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["ok"] for r in reports] == [True, True]
    assert reports[0]["composite"] == records[0]["header"]["score"]["composite"]


def test_replay_exits_non_zero_and_names_the_diverging_step(tmp_path: Path) -> None:
    record = _record("storebench/launch-week", 5, max_steps=60)
    record["steps"][30]["state_hash"] = "0" * 32
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = _cli("replay", str(path))
    assert result.returncode == 1
    assert json.loads(result.stdout.splitlines()[0])["divergence"]["step"] == 30
    assert "at step 30" in result.stderr


def test_four_episodes_in_threads_match_their_sequential_chains() -> None:
    jobs = [("storebench/price-war", 1), ("storebench/viral-trend", 2), ("storebench/price-war", 1), ("storebench/cash-crunch", 3)]
    sequential = [[s["state_hash"] for s in _record(task, seed)["steps"]] for task, seed in jobs]
    threaded: list[list[str]] = [[] for _ in jobs]

    def work(i: int) -> None:
        threaded[i] = [s["state_hash"] for s in _record(*jobs[i])["steps"]]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert threaded == sequential
    assert sequential[0] == sequential[2]


def test_replay_record_reproduces_the_score() -> None:
    record = _record("storebench/payment-outage", 8)
    report = replay_record(record)
    assert report["ok"] and report["composite"] == record["header"]["score"]["composite"]


def test_snapshot_and_restore_resume_mid_episode_identically() -> None:
    record = _record("storebench/supplier-collapse", 4)
    calls = [ToolCall(name=s["tool_calls"][0]["name"], arguments=s["tool_calls"][0]["arguments"]) for s in record["steps"][1:]]
    env = make("storebench/supplier-collapse", seed=4)
    half = len(calls) // 2
    for call in calls[:half]:
        env.step(call)
    blob = env.snapshot()
    later = make("storebench/supplier-collapse", seed=4)
    later.restore(blob)
    assert later.state_hash() == env.state_hash()
    chain = record["steps"][half]["state_hash"]
    for i, call in enumerate(calls[half:], start=half + 1):
        later.step(call)
        chain = chain_hash(chain, later.state_hash())
        assert chain == record["steps"][i]["state_hash"], f"diverged at step {i}"
    assert later.score().composite == record["header"]["score"]["composite"]
