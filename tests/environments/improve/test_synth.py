"""synth: improvement trajectories are verified before they are written, and the CLI writes JSONL records."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from environments.core import EnvError
from environments.improve.synth import main, record_problem, synthesise


def test_chains_rise_round_after_round_and_final_only_keeps_the_last_solution() -> None:
    chains, dropped = synthesise(["improve-rounds/digits"], [0], kind="chain")
    finals, _ = synthesise(["improve-rounds/digits"], [0], kind="final-only")
    assert dropped == [] and len(chains) == len(finals) == 1
    submits = [c["arguments"] for s in chains[0]["steps"] for c in s.get("tool_calls") or [] if c["name"] == "submit"]
    final = [c["arguments"] for s in finals[0]["steps"] for c in s.get("tool_calls") or [] if c["name"] == "submit"]
    assert len(submits) == 5 and final == submits[-1:]  # digits' five drafts each beat the last on seed 0
    assert chains[0]["header"]["score"]["composite"] == finals[0]["header"]["score"]["composite"] == 1.0


def test_a_record_that_does_not_rise_or_replay_is_refused() -> None:
    record = synthesise(["improve-rounds/gcd"], [1], kind="chain")[0][0]
    assert record_problem(record, "chain") is None
    flat = copy.deepcopy(record)
    flat["header"]["score"]["details"]["round_scores"] = [0.5, 0.5]
    assert record_problem(flat, "chain") == "round scores do not rise strictly: [0.5, 0.5]"
    assert (
        record_problem(record, "final-only")
        == f"{len(record['header']['score']['details']['round_scores'])} rounds: final-only has exactly one"
    )
    tampered = copy.deepcopy(record)
    tampered["header"]["score"]["composite"] = 0.5
    assert record_problem(tampered, "chain").startswith("replay diverged")


def test_it_refuses_other_tasks_and_kinds() -> None:
    with pytest.raises(EnvError, match="is not an improve-rounds task"):
        synthesise(["improve/linear"], [0], kind="chain")
    with pytest.raises(EnvError, match="kind: 'best' is not one of"):
        synthesise(["improve-rounds/gcd"], [0], kind="best")


def test_the_cli_writes_records_training_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "chain.jsonl"
    assert main(["--tasks", "improve-rounds/gcd", "--seeds", "0-1", "--kind", "chain", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["header"]["task"], r["header"]["seed"]) for r in records] == [("gcd", 0), ("gcd", 1)]
    assert "2 chain records" in capsys.readouterr().out
    assert main(["--tasks", "improve-rounds/gcd", "--seeds", "0-5000", "--out", str(out)]) == 2
