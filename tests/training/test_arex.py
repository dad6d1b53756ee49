"""arex: each arm's data is written once, the chains rise and end where final-only submits, and training reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.data import tokenize_record
from training.experiments.arex import DEMO_SEEDS, EXPERIMENT, TASKS, prepare_data


def submits(record: dict) -> list[dict]:
    return [c["arguments"] for s in record["steps"] for c in s.get("tool_calls") or [] if c["name"] == "submit"]


def test_each_arm_reads_its_own_verified_records_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tokenizer) -> None:
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    chain_path = Path(prepare_data(EXPERIMENT, {"data": "arex:chain"})["data"])
    final_path = Path(prepare_data(EXPERIMENT, {"data": "arex:final-only"})["data"])
    assert chain_path.parent == tmp_path / "experiments" / "data" and chain_path != final_path
    chains = [json.loads(line) for line in chain_path.read_text().splitlines()]
    finals = [json.loads(line) for line in final_path.read_text().splitlines()]
    expected = [(t.split("/")[1], s) for t in TASKS for s in range(*DEMO_SEEDS)]
    assert [(r["header"]["task"], r["header"]["seed"]) for r in chains] == expected  # every chain verified
    assert [(r["header"]["task"], r["header"]["seed"]) for r in finals] == expected
    for chain, final in zip(chains, finals, strict=True):
        rising = chain["header"]["score"]["details"]["round_scores"]
        assert len(rising) >= 2 and all(b > a for a, b in zip(rising, rising[1:], strict=False))
        assert submits(final) == submits(chain)[-1:]  # the same final solution, submitted once
        assert chain["header"]["harness"]["system_prompt"].startswith("You are an agent in improve-rounds.")
    stamp = chain_path.stat().st_mtime_ns
    assert prepare_data(EXPERIMENT, {"data": "arex:chain"}) == {"data": str(chain_path)} and chain_path.stat().st_mtime_ns == stamp
    (episode,) = tokenize_record(chains[0], tokenizer)  # digits seed 10000: every submitted program is trained
    trained = tokenizer.decode([t for t, m in zip(episode.input_ids, episode.mask, strict=True) if m])
    assert all(s["program"].split("\n")[0] in trained for s in submits(chains[0]))


def test_an_arm_must_name_a_known_synthesis() -> None:
    with pytest.raises(AssertionError, match="arex: data must be one of"):
        prepare_data(EXPERIMENT, {"data": "chains.jsonl"})
    assert {arm.name: arm.overrides.get("data") for arm in EXPERIMENT.arms} == {
        "trajectories": "arex:chain",
        "final-only": "arex:final-only",
        "none": None,
    }
