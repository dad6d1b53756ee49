from __future__ import annotations

import pytest

from environments.desktop.grading import Grader
from environments.desktop.shell import run_shell
from environments.desktop.tasks import TEMPLATES, synthesize
from environments.registry import list_tasks
from tests.environments.desktop.conftest import fresh


def test_splits_cover_train_dev_and_test() -> None:
    splits = {t.key: t.split for t in list_tasks("desktop")}
    assert splits == {key: split for key, (split, _) in TEMPLATES.items()}
    assert set(splits.values()) == {"train", "dev", "test"}


@pytest.mark.parametrize("key", list(TEMPLATES))
@pytest.mark.parametrize("seed", [0, 1, 1000, 4242])
def test_every_task_is_solved_by_its_solution_and_failed_by_doing_nothing(key: str, seed: int) -> None:
    data, ui = fresh(seed)
    task = synthesize(key, data, seed)
    grader = Grader(task, data)
    assert grader.grade(data, actions=0)["goal"] == 0.0
    for command in task.solution:
        output, failed = run_shell(data, ui, command)
        assert not failed, output
    assert grader.grade(data, actions=len(task.solution))["composite"] == 1.0
    assert task.goals and task.brief.endswith(".") and synthesize(key, fresh(seed)[0], seed) == task


def test_the_shopping_goal_has_exactly_one_cheapest_answer() -> None:
    for seed in range(30):
        data, _ = fresh(seed)
        goal = synthesize("buy-cheapest", data, seed).goals[0]
        fits = sorted(
            p.price_cents
            for p in data.catalog
            if p.category == goal["category"] and p.rating >= goal["min_rating"] and p.price_cents < goal["max_price"] * 100
        )
        assert fits and (len(fits) == 1 or fits[0] < fits[1])
