from __future__ import annotations

import training.experiments as experiments
from environments.analyzers import analyzer_for
from environments.desktop.hybrid import HELD_OUT_SEEDS, TRAIN_TASKS
from environments.registry import task_set
from training.recipes.gated_sd import gate_weight


def test_the_computersd_arms_differ_only_in_the_self_distillation_weight_and_its_gate() -> None:
    experiment = experiments.get("computersd")
    arms = {a.name: a for a in experiment.arms}
    assert list(arms) == ["grpo", "sd-ungated", "computersd"] and experiment.method == "computersd"
    assert {a.recipe for a in arms.values()} == {"gated_sd"}
    assert arms["grpo"].overrides["sd_coef"] == 0.0
    assert arms["sd-ungated"].overrides == {"sd_coef": 0.5, "gate": "none"}
    assert arms["computersd"].overrides == {"sd_coef": 0.5, "gate": "threshold", "gate_threshold": 0.5}
    # ungated distils a step the analyser found fine; the full method only the ones it found wanting
    assert gate_weight(1.0, "none", 0.5) == 1.0 and gate_weight(1.0, "threshold", 0.5) == 0.0 and gate_weight(0.1, "threshold", 0.5) == 1.0


def test_computersd_trains_on_desktop_train_with_the_desktops_analyser_and_tests_held_out_tasks_and_seeds() -> None:
    experiment = experiments.get("computersd")
    assert experiment.shared["task"] == "desktop/train" and {t.key for t in task_set("desktop/train")} == set(TRAIN_TASKS)
    assert type(analyzer_for("desktop")).__module__ == "environments.desktop.analyser"  # the scripted one
    held_out = {t.key for t in task_set(experiment.evaluation.task)}
    assert held_out and not held_out & set(TRAIN_TASKS)
    assert min(experiment.evaluation.test_seeds + experiment.evaluation.dev_seeds) >= HELD_OUT_SEEDS
    assert experiment.measures.endswith(":drift_measures")  # the same seeds with drift high
