from __future__ import annotations

import training.experiments as experiments
from environments.desktop.hybrid import HELD_OUT_SEEDS, TRAIN_TASKS
from environments.registry import task_set
from training.experiments.hybridcua import DATA, hybrid_episode


def test_the_hybridcua_definition_has_the_papers_arms_and_evaluates_held_out_tasks_and_seeds() -> None:
    experiment = experiments.get("hybridcua")
    assert [a.name for a in experiment.arms] == ["gui-sft", "hybrid-sft", "hybrid-sft+rl", "hybrid-sft+rl-shellaware"]
    assert (
        experiment.method == "hybrid-sft+rl-shellaware" and experiment.arm(experiment.method).overrides["reward_component"] == "shell_aware"
    )
    assert {a.overrides["data"] for a in experiment.arms} <= set(DATA) and experiment.arm("gui-sft").overrides["rl"] is False
    held_out = {t.key for t in task_set(experiment.evaluation.task)}
    assert held_out and not held_out & set(TRAIN_TASKS)
    assert min(experiment.evaluation.test_seeds + experiment.evaluation.dev_seeds) >= HELD_OUT_SEEDS


def test_episode_measures_count_success_steps_and_shell_share() -> None:
    record = {
        "header": {"score": {"passed": True}},
        "steps": [
            {"source": "env"},
            {"source": "agent", "tool_calls": [{"name": "shell"}]},
            {"source": "agent", "tool_calls": [{"name": "click"}]},
            {"source": "agent", "tool_calls": [{"name": "submit"}]},
        ],
    }
    assert hybrid_episode(record) == {"success": 1.0, "steps per task": 2.0, "shell share": 0.5}
