"""GRPO's reward_component option (what the graphcert experiment's rubric arm selects) and the experiment itself."""

from __future__ import annotations

import pytest
import torch

from training import ConfigError, make_config
from training.credit import group_advantages
from training.experiments import get
from training.recipes.grpo import training_reward


def _record(composite: float, rubric: float, reward: float | None = None) -> dict:
    header = {
        "task": "graphcert/lookup-train",
        "score": {"composite": composite, "components": {"exact_match": composite, "rubric": rubric}},
    }
    if reward is not None:
        header["reward"] = reward
    return {"header": header, "steps": []}


def test_a_component_replaces_the_composite_and_none_keeps_record_reward():
    alice = _record(0.0, 0.5)  # cited the proof, misnamed the answer
    assert training_reward(alice, "rubric") == 0.5 and training_reward(alice, "") == 0.0
    assert training_reward(_record(1.0, 1.0, reward=0.75), "") == 0.75  # a team's reward, less consultation costs


def test_rubric_rewards_separate_a_group_that_outcome_rewards_leave_flat():
    # four rollouts, none with the right answer: exact match gives no signal, the rubric ranks their evidence
    group = [_record(0.0, r) for r in (0.5, 0.25, 0.0, 0.0)]
    outcome = group_advantages(torch.tensor([training_reward(r, "") for r in group]), [0, 0, 0, 0])
    rubric = group_advantages(torch.tensor([training_reward(r, "rubric") for r in group]), [0, 0, 0, 0])
    assert outcome.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert rubric[0] > rubric[1] > rubric[2] == rubric[3]


def test_a_missing_component_or_a_malformed_name_is_refused_by_name():
    with pytest.raises(ValueError, match=r"reward_component='evidence_f2'.*\['exact_match', 'rubric'\]"):
        training_reward(_record(1.0, 1.0), "evidence_f2")
    with pytest.raises(ConfigError, match="reward_component='rubric; rm'"):
        make_config("grpo", {"model": "m", "reward_component": "rubric; rm"})


def test_the_experiment_compares_rubric_and_outcome_rewards_on_held_out_universes():
    experiment = get("graphcert")
    assert experiment.method == "rubric" and {a.name: a.overrides for a in experiment.arms} == {
        "rubric": {"reward_component": "rubric"},
        "outcome": {"reward_component": ""},
    }
    assert experiment.shared["task"].endswith("-train") and experiment.evaluation.task.endswith("-test")
    assert experiment.evaluation.components and len(experiment.train_seeds) >= 3


def test_the_warm_start_is_built_once_and_shared_by_every_arm(tmp_path, monkeypatch):
    from training.experiments import graphcert
    from training.experiments.graphcert import prepare_start
    from training.tiny import tiny_model_path

    universes = {seed // 100 for seed in graphcert.DEMO_SEEDS}  # lookup-train: 100 seeds per universe
    assert len(universes) == len(graphcert.DEMO_SEEDS) >= 64  # one demonstration per universe: no names to memorise
    monkeypatch.setattr(graphcert, "DEMO_SEEDS", graphcert.DEMO_SEEDS[:4])  # the tiny model's run: four universes
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "var"))
    experiment = get("graphcert")
    values = {**experiment.shared, "model": tiny_model_path(0), "max_steps": 1}
    start = prepare_start(experiment, {**values, "reward_component": "rubric"})["model"]
    demos = next((tmp_path / "var" / "experiments" / "graphcert").glob("warm-*/demonstrations.jsonl"))
    assert len(demos.read_text().splitlines()) == 4
    stamp = demos.stat().st_mtime_ns
    assert prepare_start(experiment, {**values, "reward_component": ""}) == {"model": start}  # the other arm: same start
    assert demos.stat().st_mtime_ns == stamp  # nothing rebuilt
