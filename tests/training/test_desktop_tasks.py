from __future__ import annotations

from training.experiments.desktop_tasks import END, README, START, task_table


def test_the_desktop_readme_lists_which_experiments_train_on_each_task_as_the_definitions_say() -> None:
    section = README.read_text().split(START, 1)[1].split(END, 1)[0].strip()
    assert section == task_table(), "run python -m training.experiments.desktop_tasks"
    rows = {line.split(" | ")[0][2:]: line for line in section.splitlines()[2:]}
    assert "computersd (grpo, sd-ungated, computersd)" in rows["move-files"] and "dreamer (dreamed-sft, real-sft)" in rows["reply-mail"]
    assert "| test | - | " in rows["errand"] and "gui-priors" in rows["errand"]  # held out: evaluated, never trained on
