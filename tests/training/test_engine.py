"""Checkpoints hold tensors and JSON only: resuming never unpickles code, and exact resume still works."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from training.config import TrainConfig
from training.engine import Hooks, Trainer


class WritesAMarker:
    """A pickle that, once loaded without weights_only, creates the file it names."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def _trainer(tiny_path: Path, out: Path, **extra: Any) -> Trainer:
    config = TrainConfig(model=str(tiny_path), output_dir=str(out), max_steps=4, device="cpu", seed=3, **extra)
    return Trainer(config, recipe="sft", hooks=Hooks(progress=False))


def _one_step(trainer: Trainer) -> None:
    def loss_fn(_: Any) -> tuple[torch.Tensor, dict[str, float]]:
        ids = torch.tensor([[1, 2, 3, 4]])
        loss = trainer.model(input_ids=ids, labels=ids).loss
        return loss, {"loss": float(loss.detach())}

    trainer.optimize([None], loss_fn)


def test_trainer_state_loads_with_weights_only_and_keeps_rng_and_recipe_state(tiny_path: Path, tmp_path: Path) -> None:
    trainer = _trainer(tiny_path, tmp_path / "run")
    _one_step(trainer)
    trainer.state["refine_selection"] = [2, 0]
    random.seed(11), np.random.seed(12), torch.manual_seed(13)
    folder = Path(trainer.save())
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))

    tensors = torch.load(folder / "trainer_state.pt", weights_only=True)
    assert set(tensors) == {"optimizer", "scheduler", "torch_rng"}
    plain = json.loads((folder / "trainer_state.json").read_text())
    assert (plain["step"], plain["recipe_state"]) == (1, {"refine_selection": [2, 0]})

    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    resumed = _trainer(tiny_path, tmp_path / "again", resume_from=str(folder))
    assert (resumed.step, resumed.state) == (1, {"refine_selection": [2, 0]})
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected
    assert resumed.optimizer.state_dict()["state"][0]["step"] == torch.tensor(1.0)


def test_a_checkpoint_with_a_malicious_pickle_is_refused_and_its_code_never_runs(tiny_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "step-000001"
    shutil.copytree(tiny_path, folder)
    marker = tmp_path / "pwned"
    torch.save({"optimizer": WritesAMarker(marker)}, folder / "trainer_state.pt")
    (folder / "trainer_state.json").write_text(
        json.dumps({"step": 1, "python_rng": [3, [0] * 625, None], "numpy_rng": [], "recipe_state": {}})
    )

    with pytest.raises(ValueError, match=r"trainer_state.pt holds more than tensors and plain values; refusing to unpickle it"):
        _trainer(tiny_path, tmp_path / "run", resume_from=str(folder))
    assert not marker.exists()
