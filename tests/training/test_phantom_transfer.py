"""The phantom_transfer experiment: arms that differ only in their data, and the data each one names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.experiments.phantom_transfer import DATASETS, EXPERIMENT, prepare_data


def test_trained_arms_differ_only_in_the_dataset_they_name():
    trained = [arm for arm in EXPERIMENT.arms if arm.recipe == "sft"]
    assert all(set(arm.overrides) == {"data"} for arm in trained)
    assert sorted(arm.overrides["data"] for arm in trained) == sorted(DATASETS)
    assert EXPERIMENT.arm("none").recipe == "none" and "data" not in EXPERIMENT.shared
    assert {DATASETS[n].questions for n in ("many_hops", "constraint", "comparison")} == {"many_hops", "constraint", "comparison"}
    assert DATASETS["oracle"].anchor == "oracle" and DATASETS["all"].anchor == "multisearch"
    assert {c.task for c in DATASETS.values()} == {"phantom/mixed-train"} and EXPERIMENT.evaluation.task == "phantom/mixed-test"


def test_prepare_writes_one_pass_of_the_named_dataset_and_leaves_the_none_arm_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    out = prepare_data(EXPERIMENT, {"data": "comparison", "max_steps": 2, "batch_size": 2, "seed": 0})
    lines = Path(out["data"]).read_text().splitlines()
    assert len(lines) == 4 and {json.loads(line)["header"]["meta"]["question_kind"] for line in lines} == {"comparison"}
    assert prepare_data(EXPERIMENT, {"model": "m", "seed": 0}) == {}
    with pytest.raises(ValueError, match="data='deep'"):
        prepare_data(EXPERIMENT, {"data": "deep", "max_steps": 1, "batch_size": 1})
