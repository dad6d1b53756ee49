"""PG-SFT's options of the sft recipe (turn_weighting, kl_coef) and the pgsft experiment's data."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM

from environments.toolgym.anchors import ExpertPolicy
from training import ConfigError, run_recipe
from training.evidence.common import write_records
from training.losses import sft_loss
from training.recipes.sft import sft_step_loss
from training.scripted import scripted_episodes


class FixedLogits(torch.nn.Module):
    """A model whose logits are a parameter, whatever the input."""

    def __init__(self, logits: list[list[list[float]]]):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor(logits))

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return SimpleNamespace(logits=self.logits)


def _batch():
    # two tokens, the second trained: logits[0, 0] predict label 1
    return {
        "input_ids": torch.tensor([[0, 1]]),
        "attention_mask": torch.ones(1, 2),
        "mask": torch.tensor([[0.0, 1.0]]),
        "weights": torch.tensor([[0.0, 1.0]]),
    }


def test_the_kl_penalty_adds_kl_coef_times_kl_of_the_model_to_the_start_model():
    model = FixedLogits([[[0.0, 0.0], [5.0, 1.0]]])  # p = (1/2, 1/2) at the trained position
    start = FixedLogits([[[0.0, math.log(3.0)], [0.0, 0.0]]])  # q = (1/4, 3/4)
    loss, metrics = sft_step_loss(model, _batch(), start, 0.5)
    kl = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)  # KL(p || q) = ln(4/3) / 2
    assert metrics["kl_to_start"] == pytest.approx(kl) and metrics["nll"] == pytest.approx(math.log(2.0))
    assert loss.item() == pytest.approx(math.log(2.0) + 0.5 * kl) and metrics["loss"] == pytest.approx(loss.item())
    loss.backward()
    assert model.logits.grad is not None and start.logits.grad is None  # the start model gets no gradient


def test_without_a_reference_the_step_loss_is_the_sft_loss_exactly():
    model = FixedLogits([[[0.3, -0.2], [5.0, 1.0]]])
    batch = _batch()
    loss, metrics = sft_step_loss(model, batch)
    expected, _ = sft_loss(model.logits[:, :-1], batch["input_ids"][:, 1:], batch["mask"][:, 1:], batch["weights"][:, 1:])
    assert loss.item() == expected.item() and "kl_to_start" not in metrics


@pytest.fixture(scope="module")
def chain_demos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chain")
    return str(write_records(folder / "demos.jsonl", scripted_episodes(ExpertPolicy(), "toolgym/chain", range(4))))


def _run(tiny_path, data, out, **extra):
    values = {
        "model": str(tiny_path),
        "data": data,
        "batch_size": 2,
        "max_tokens": 700,
        "learning_rate": 1e-3,
        "max_steps": 2,
        "output_dir": str(out),
        **extra,
    }
    result = run_recipe("sft", values)
    rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return AutoModelForCausalLM.from_pretrained(result.final_checkpoint).state_dict(), rows


def test_info_gain_with_floor_one_trains_exactly_as_uniform_sft_and_weighs_turns_otherwise(tiny_path, chain_demos, tmp_path):
    uniform, uniform_rows = _run(tiny_path, chain_demos, tmp_path / "uniform")
    floored, floored_rows = _run(tiny_path, chain_demos, tmp_path / "floored", turn_weighting="info_gain", info_gain_floor=1.0)
    assert all(torch.equal(uniform[k], floored[k]) for k in uniform)
    assert [r["loss"] for r in uniform_rows] == [r["loss"] for r in floored_rows]
    assert floored_rows[-1]["turn_weight_min"] == floored_rows[-1]["turn_weight_max"] == 1.0

    _, rows = _run(
        tiny_path, chain_demos, tmp_path / "weighted", turn_weighting="info_gain", info_gain_temperature=0.001, info_gain_floor=0.0
    )
    last = rows[-1]
    assert last["turn_weight_min"] < 1.0 < last["turn_weight_max"]  # a sharp softmax over gains that differ
    assert last["info_gain_min"] < last["info_gain_max"] and last["info_gain_unweighted_episodes"] == 0.0
    assert rows[0]["loss"] != uniform_rows[0]["loss"] and rows[0]["nll"] == pytest.approx(uniform_rows[0]["nll"])  # same batch


def test_kl_coef_logs_the_kl_to_the_start_model(tiny_path, chain_demos, tmp_path):
    _, rows = _run(tiny_path, chain_demos, tmp_path / "kl", kl_coef=0.5)
    assert rows[0]["kl_to_start"] == pytest.approx(0.0, abs=1e-6)  # the first step is taken at the start model
    assert rows[1]["kl_to_start"] > 0.0 and rows[1]["loss"] == pytest.approx(rows[1]["nll"] + 0.5 * rows[1]["kl_to_start"], rel=1e-5)


def test_bad_pgsft_fields_are_named(tiny_path, chain_demos, tmp_path):
    for extra, field in [
        ({"turn_weighting": "gain"}, "turn_weighting"),
        ({"kl_coef": -0.1}, "kl_coef"),
        ({"info_gain_floor": 1.5}, "info_gain_floor"),
        ({"info_gain_temperature": 0.0}, "info_gain_temperature"),
        ({"turn_weighting": "info_gain", "role": "critic"}, "turn_weighting"),
    ]:
        with pytest.raises(ConfigError, match=field):
            run_recipe("sft", {"model": str(tiny_path), "data": chain_demos, "output_dir": str(tmp_path), **extra})


def test_the_experiments_demonstrations_are_made_once_and_named_by_their_content(tmp_path, monkeypatch):
    from training.experiments.pgsft import DEMO_SEEDS, EXPERIMENT, TARGET, prepare_demonstrations

    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    first = prepare_demonstrations(EXPERIMENT, {})
    stamp = Path(first["data"]).stat().st_mtime_ns
    assert prepare_demonstrations(EXPERIMENT, {"max_steps": 2}) == first and Path(first["data"]).stat().st_mtime_ns == stamp
    records = [json.loads(line) for line in Path(first["data"]).read_text().splitlines()]
    assert [r["header"]["seed"] for r in records] == list(DEMO_SEEDS) and {r["header"]["task"] for r in records} == {TARGET.split("/")[1]}
    assert all(r["header"]["score"]["passed"] for r in records) and max(DEMO_SEEDS) < 100_000  # never a held-out seed
