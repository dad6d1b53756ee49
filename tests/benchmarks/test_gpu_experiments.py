from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from training import make_config
from training.experiments import load_all

ROOT = Path(__file__).resolve().parents[2]


def _gpu_experiments():
    spec = importlib.util.spec_from_file_location("gpu_experiments", ROOT / "benchmarks" / "gpu_experiments.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(n for n, e in load_all().items() if e.gpu is not None))
def test_every_trained_arms_gpu_config_is_one_its_recipe_accepts(name, tmp_path):
    experiment = load_all()[name]
    module = _gpu_experiments()
    for arm in experiment.arms:
        if arm.recipe == "none":
            continue
        # what a `prepare` makes (demonstrations, a warm start) is costly to build; a stand-in path is enough here
        config = module.arm_config(
            experiment,
            arm,
            tmp_path / "student",
            tmp_path / "teacher",
            tmp_path,
            prepare=lambda experiment, values: {"data": str(tmp_path / "prepared.jsonl")},
        )
        built = make_config(arm.recipe, config)
        assert built.max_steps == experiment.gpu.steps and built.model == str(tmp_path / "student")
        trained_on = {**experiment.shared, **arm.overrides}.get("task")
        if trained_on and hasattr(built, "task"):
            assert built.task == trained_on  # trained where the experiment trains, never on its evaluation set
