from __future__ import annotations

import dataclasses
import json

import pytest

from training.federation.participants import fedgym_participants
from training.federation.rounds import SHARED, FederationSettings, federation_run

pytestmark = pytest.mark.slow


def _settings(tiny_path, mode: str, rounds: int = 1) -> FederationSettings:
    return FederationSettings(
        mode=mode,
        base=str(tiny_path),
        rounds=rounds,
        local_steps=1,
        lora_r=2,
        batch_size=2,
        utility_seeds=[50_000],
        max_turns=1,
        max_new_tokens=8,
        probe_records=2,
    )


@pytest.fixture(scope="module")
def people():
    return fedgym_participants(["a", "b", "c"], records=2, holdout=2)


def test_fedavg_rounds_share_one_model_store_every_export_and_resume(tiny_path, people, tmp_path):
    summary = federation_run(people, _settings(tiny_path, "fedavg", rounds=2), out=tmp_path)
    assert [r["round"] for r in summary["rounds"]] == [0, 1]
    shared = str(tmp_path / "round-001" / "models" / SHARED)
    assert summary["models"] == {"a": shared, "b": shared, "c": shared}
    assert not (tmp_path / "round-000" / "models").exists()  # pruned: no round starts from it any more
    for r in (0, 1):
        exports = sorted(p.name for p in (tmp_path / f"round-{r:03d}" / "artifacts").iterdir())
        assert exports == [f"{p}-{k}.{x}" for p in "abc" for k in ("adapter", "stats") for x in ("bin", "json")]
        manifests = [json.loads(p.read_text()) for p in (tmp_path / f"round-{r:03d}" / "artifacts").glob("*.json")]
        assert all(m["refused"] is None and m["gate"]["passed"] for m in manifests)
        metrics = summary["rounds"][r]
        assert metrics["bytes up"] == sum(m["manifest"]["bytes"] for m in manifests)
        adapter = (tmp_path / f"round-{r:03d}" / "aggregate-adapter" / "adapter_model.safetensors").stat().st_size
        stats = len(json.dumps(json.loads((tmp_path / f"round-{r:03d}" / "stats.json").read_text())).encode())
        assert metrics["bytes down"] == 3 * (adapter + stats)
        assert metrics["canaries found"] == 0.0 and set(metrics) >= {"utility a", "utility b", "utility c", "membership advantage"}
        assert 0.0 <= metrics["utility mean"] <= 1.0
    stamp = (tmp_path / "round-001" / "metrics.json").stat().st_mtime_ns
    again = federation_run(people, _settings(tiny_path, "fedavg", rounds=2), out=tmp_path)
    assert again["rounds"] == summary["rounds"] and (tmp_path / "round-001" / "metrics.json").stat().st_mtime_ns == stamp


def test_skills_rounds_merge_skills_and_the_gate_keeps_a_canary_home(tiny_path, people, tmp_path):
    leaky = [*people[:1], type(people[1])(**{**people[1].__dict__, "canaries": {**people[1].canaries, "catalogue.metric": "calls_mean"}})]
    summary = federation_run(leaky, _settings(tiny_path, "skills"), out=tmp_path)
    (metrics,) = summary["rounds"]
    assert json.loads((tmp_path / "round-000" / "skills.json").read_text()) == [
        "To answer 'What is the color of the <asked thing>? Look it up, then answer.': call lookup(item=<the asked thing in the "
        "question>); then call answer(color=<the color field of lookup's result>)."
    ]
    assert metrics["refused exports"] == 1.0 and metrics["canaries found"] == 1.0
    refused = json.loads((tmp_path / "round-000" / "artifacts" / "b-stats.json").read_text())["refused"]
    assert refused["code"] == "canary_found" and refused["fields"] == ["catalogue.metric"] and "calls_mean" not in refused["message"]
    assert not (tmp_path / "round-000" / "artifacts" / "b-stats.bin").exists()  # a refused artifact is not kept with the exports
    assert summary["models"] == {"a": str(tmp_path / "round-000" / "models" / "a"), "b": str(tmp_path / "round-000" / "models" / "b")}


def test_local_rounds_share_nothing(tiny_path, people, tmp_path):
    (metrics,) = federation_run(people[:2], _settings(tiny_path, "local"), out=tmp_path)["rounds"]
    assert metrics["bytes exchanged"] == 0.0 and metrics["canaries found"] == 0.0 and not (tmp_path / "round-000" / "artifacts").exists()


def test_a_received_adapter_joins_the_first_fedavg_round_weighted_and_a_mismatched_one_is_left_out(tiny_path, people, tmp_path):
    import torch
    from safetensors.torch import load_file

    from training.federation.aggregate import fedavg
    from training.federation.artifacts import Artifact, adapter_artifact, adapter_tensors

    # without attribute cases, canaries or stats the gate only runs the membership attack: the test stays a few seconds
    a, b = (dataclasses.replace(p, attributes=[], canaries={}, share=("adapter",)) for p in people[:2])
    federation_run([a], _settings(tiny_path, "fedavg"), out=tmp_path / "elsewhere")  # another installation's round
    theirs = Artifact(
        "adapter", (tmp_path / "elsewhere" / "round-000" / "artifacts" / "a-adapter.bin").read_bytes(), "acme-lab:a", 0, {"examples": 6}
    )
    odd = adapter_artifact({"x.lora_A.weight": torch.zeros(1, 1)}, lora={"r": 1}, examples=100, source="odd", round=0)
    summary = federation_run([b], _settings(tiny_path, "fedavg"), out=tmp_path / "here", received=[theirs, odd])
    (metrics,) = summary["rounds"]
    assert metrics["received"] == 1.0  # the mismatched adapter is left out
    ours = load_file(str(tmp_path / "here" / "round-000" / "artifacts" / "b-adapter.bin"))
    expected = fedavg([ours, adapter_tensors(theirs)], [len(b.records), min(6, len(b.records))])  # a claim is capped at ours
    merged = load_file(str(tmp_path / "here" / "round-000" / "aggregate-adapter" / "adapter_model.safetensors"))
    assert sorted(merged) == sorted(expected) and all(torch.allclose(merged[k], expected[k]) for k in merged)
    assert not all(torch.allclose(merged[k], ours[k]) for k in merged)  # theirs moved the average


def test_a_received_adapters_weight_is_capped_at_the_largest_participants():
    import torch

    from training.federation.artifacts import adapter_artifact
    from training.federation.rounds import received_adapters

    like = {"x.lora_A.weight": torch.zeros(2, 3)}
    modest = adapter_artifact({"x.lora_A.weight": torch.ones(2, 3)}, lora={"r": 2}, examples=5, source="p:modest", round=0)
    boastful = adapter_artifact({"x.lora_A.weight": torch.ones(2, 3)}, lora={"r": 2}, examples=10**9, source="p:boast", round=0)
    weights = [weight for _, weight in received_adapters([modest, boastful], like=like, cap=40)]
    assert weights == [5, 40]  # a claim of a billion examples counts as the largest participant's 40
