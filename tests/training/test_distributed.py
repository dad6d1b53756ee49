"""Multi-process SFT on CPU with gloo through torchrun (training/distributed.py, training/launch.py).

One reference run in this process (6 steps, a checkpoint every 2), then two 2-process runs launched as the lab
worker launches them: DDP from scratch, stopped by should_stop after step 4, and FSDP2 resuming the reference's
step-2 checkpoint (1 -> 2 processes); finally this process resumes the FSDP run's step-4 checkpoint (2 -> 1).
Every run has the same global batch (grad_accum=2 micro-batches of 1 episode), so losses and weights must agree
within TOL: the only differences are float rounding in the gradient all-reduce (sums in another order).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from training import ConfigError, make_config, run_recipe
from training.engine import Hooks
from training.evidence.common import write_records
from training.launch import launch

TOL = 1e-5  # fp32; the observed gap is ~1e-7 (the all-reduce adds the two ranks' gradients in another order)
LIMIT_S = 240  # a bound on each 2-process run, so a hung rendezvous fails the test instead of the suite


def _record(index: int) -> dict[str, Any]:
    from environments.trajectory import make_step, new_record

    item, color = ["lamp", "desk", "mug", "sofa"][index % 4], ["red", "blue", "green", "teal"][index % 4]
    steps = [
        make_step(index=0, source="env", message=f"Color of the {item}?"),
        make_step(
            index=1,
            source="agent",
            tool_calls=[{"id": "c0", "name": "lookup", "arguments": {"item": item}}],
            results=[{"call_id": "c0", "content": {"color": color}, "is_error": False}],
        ),
        make_step(index=2, source="agent", message=f"The {item} is {color}."),
    ]
    return new_record(
        header={"env": "toolgym", "task": "lookup", "seed": index, "source": "rollout", "score": {"composite": 1.0}}, steps=steps
    )


@pytest.fixture(scope="module")
def base(tiny_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = write_records(tmp_path_factory.mktemp("data") / "demos.jsonl", [_record(i) for i in range(4)])
    return {
        "model": str(tiny_path),
        "data": str(data),
        "batch_size": 1,
        "grad_accum": 2,
        "max_tokens": 128,
        "learning_rate": 3e-3,
        "save_every": 2,
        "device": "cpu",
    }


@pytest.fixture(scope="module")
def reference(base: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one")
    run_recipe("sft", {**base, "max_steps": 6, "output_dir": str(out)})
    return out


def _losses(folder: Path) -> dict[int, float]:
    return {row["step"]: row["loss"] for row in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())}


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def _assert_same_weights(a: Path, b: Path) -> None:
    left, right = _weights(a), _weights(b)
    assert left.keys() == right.keys()
    worst = max(float((left[k] - right[k]).abs().max()) for k in left)
    assert worst < TOL, f"weights of {a} and {b} differ by {worst}"


def _optimizer(folder: Path) -> dict[str, Any]:
    return torch.load(folder / "trainer_state.pt", weights_only=True)["optimizer"]


def test_ddp_in_two_processes_matches_one_process_and_stops_when_asked(base: dict[str, Any], reference: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, str, float]] = []
    checkpoints: list[int] = []
    hooks = Hooks(
        on_metric=lambda s, n, v: seen.append((s, n, v)),
        on_checkpoint=lambda s, f: checkpoints.append(s),
        should_stop=lambda: any(s >= 4 for s, _, _ in seen),
        progress=False,
    )
    # 40 steps leave the parent's 0.2 s polls ample time to see step 4 and ask for the stop (a constant learning
    # rate: max_steps changes nothing else)
    config = make_config("sft", {**base, "max_steps": 40, "output_dir": str(tmp_path), "parallel": "ddp", "processes": 2})
    result = launch("sft", config, hooks, timeout=LIMIT_S)

    assert result.stopped and 4 <= result.steps < 40, result  # stopped between steps, every rank at the same one
    expected = _losses(reference)
    relayed = {s: v for s, n, v in seen if n == "loss"}
    assert sorted(relayed) == list(range(1, result.steps + 1))
    assert all(abs(relayed[s] - expected[s]) < TOL for s in expected if s in relayed), (relayed, expected)
    assert checkpoints[:2] == [2, 4] and checkpoints[-1] == result.steps  # relayed from rank 0, plus the stop's own
    _assert_same_weights(tmp_path / "step-000004", reference / "step-000004")


def test_fsdp_resumes_one_process_checkpoint_and_one_process_resumes_it_back(base: dict[str, Any], reference: Path, tmp_path: Path) -> None:
    sharded = tmp_path / "fsdp"
    config = make_config(
        "sft",
        {
            **base,
            "max_steps": 4,
            "output_dir": str(sharded),
            "parallel": "fsdp",
            "processes": 2,
            "resume_from": str(reference / "step-000002"),
        },
    )
    result = launch("sft", config, Hooks(progress=False), timeout=LIMIT_S)
    assert result.steps == 4 and not result.stopped
    expected, got = _losses(reference), _losses(sharded)
    assert sorted(got) == [3, 4] and all(abs(got[s] - expected[s]) < TOL for s in got), (got, expected)
    _assert_same_weights(sharded / "step-000004", reference / "step-000004")
    # the checkpoint holds full tensors in the one-process format (not shards), and names the real architecture
    full, one = _optimizer(sharded / "step-000004"), _optimizer(reference / "step-000004")
    assert {k: v["exp_avg"].shape for k, v in full["state"].items()} == {k: v["exp_avg"].shape for k, v in one["state"].items()}
    assert json.loads((sharded / "step-000004" / "config.json").read_text())["architectures"] == ["Qwen3ForCausalLM"]

    back = tmp_path / "one"
    run_recipe("sft", {**base, "max_steps": 6, "output_dir": str(back), "resume_from": str(sharded / "step-000004")})
    got = _losses(back)
    assert sorted(got) == [5, 6] and all(abs(got[s] - expected[s]) < TOL for s in got), (got, expected)
    _assert_same_weights(back / "step-000006", reference / "step-000006")


@pytest.mark.parametrize(
    ("values", "field", "words"),
    [
        ({"parallel": "mesh"}, "parallel", "none, ddp, fsdp"),
        ({"processes": 2}, "processes", "needs parallel"),
        ({"parallel": "ddp", "processes": 2, "grad_accum": 3}, "grad_accum", "multiple of processes=2"),
        ({"parallel": "fsdp", "processes": 2, "grad_accum": 2, "lora_r": 4}, "lora_r", "use parallel='ddp'"),
        ({"parallel": "ddp", "processes": 2, "grad_accum": 2, "device": "cuda:1"}, "device", "cuda:LOCAL_RANK"),
        ({"parallel": "ddp", "token_budget": 100}, "token_budget", "uneven"),
    ],
)
def test_parallel_settings_are_checked_naming_the_field(base: dict[str, Any], values: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_config("sft", {**base, **values})
    assert field in caught.value.fields and words in str(caught.value)


def test_recipes_not_written_for_several_processes_refuse_parallel(tiny_path: Path) -> None:
    with pytest.raises(ConfigError, match="parallel='ddp': GRPOConfig runs in one process only"):
        make_config("grpo", {"model": str(tiny_path), "parallel": "ddp"})


def _fake_torchrun(result: bool, code: int) -> Any:
    """A torchrun stand-in: rank 0's result.json written (or not), then the exit code a crashed teardown gives."""

    def command(recipe: str, config_file: Path, control: Path, processes: int, port: int) -> list[str]:
        body = "import pathlib, json, sys\n"
        if result:
            body += f"pathlib.Path({str(control)!r}, 'result.json').write_text(json.dumps({{'steps': 2, 'last_metrics': {{}}, 'stopped': False}}))\n"
        return [sys.executable, "-c", body + f"sys.exit({code})"]

    return command


def test_a_teardown_crash_after_the_run_completed_keeps_the_result_and_a_missing_result_fails(
    base: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import training.launch

    config = make_config("sft", {**base, "parallel": "ddp", "processes": 2, "max_steps": 2, "output_dir": str(tmp_path / "a")})
    monkeypatch.setattr(training.launch, "torchrun_command", _fake_torchrun(result=True, code=134))
    assert launch("sft", config).steps == 2  # rank 0 wrote result.json only after every rank met the closing barrier
    monkeypatch.setattr(training.launch, "torchrun_command", _fake_torchrun(result=False, code=1))
    with pytest.raises(RuntimeError, match="torchrun exited with 1"):
        launch("sft", make_config("sft", {**config.to_dict(), "output_dir": str(tmp_path / "b")}))
