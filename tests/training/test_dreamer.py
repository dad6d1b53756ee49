from __future__ import annotations

import json
from pathlib import Path

import training.experiments as experiments
from training.experiments.dreamer import DATA, dreamed_file, prepare_data
from training.experiments.hybridcua import data_file


def test_the_dreamer_arms_are_the_base_and_sft_on_dreamed_or_real_data_at_the_same_compute() -> None:
    experiment = experiments.get("dreamer")
    arms = {a.name: a for a in experiment.arms}
    assert list(arms) == ["base", "dreamed-sft", "real-sft"] and experiment.method == "dreamed-sft"
    assert arms["base"].recipe == "none"
    assert {a.overrides["data"] for a in (arms["dreamed-sft"], arms["real-sft"])} == set(DATA)
    assert all(a.recipe == "sft_grpo" and a.overrides["rl"] is False for a in (arms["dreamed-sft"], arms["real-sft"]))
    assert prepare_data(experiment, {**experiment.shared}) == {}  # the base arm reads no data


def test_dreamed_records_are_the_real_ones_with_dreamed_screens_after_the_brief(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    dreamed = [json.loads(line) for line in Path(dreamed_file(1)).read_text().splitlines()]
    real = [json.loads(line) for line in Path(data_file(("gui",), 1)).read_text().splitlines()]
    assert len(dreamed) == len(real) == 9  # 3 train tasks x 3 drift levels on seed 0
    for d, r in zip(dreamed, real, strict=True):
        assert d["header"]["meta"]["dreamed"] is True and "dreamed" not in (r["header"].get("meta") or {})
        assert (d["header"]["task"], d["header"]["seed"], d["header"]["options"]) == (
            r["header"]["task"],
            r["header"]["seed"],
            r["header"].get("options") or {},
        )
        assert d["steps"][0]["message"] == r["steps"][0]["message"] and d["header"]["harness"]["system_prompt"]
        calls = [[(c["name"], c["arguments"]) for c in s.get("tool_calls") or []] for s in d["steps"]]
        assert calls == [[(c["name"], c["arguments"]) for c in s.get("tool_calls") or []] for s in r["steps"]]
        assert all(res["content"]["dreamed"] for s in d["steps"][1:] for res in s["results"])
    assert prepare_data(experiments.get("dreamer"), {"data": "dreamer:real", "sft_steps": 1, "sft_batch_size": 1})["data"] == data_file(
        ("gui",), 1
    )
