"""The contract check, over every registered environment and task."""

from __future__ import annotations

import pytest

from environments.contract import check_task
from environments.registry import list_tasks


def test_storebench_keeps_the_contract_on_a_private_seed() -> None:
    assert check_task("storebench/price-war", seed=987654, steps=80) == []


@pytest.mark.slow
@pytest.mark.parametrize("task", [t.id for t in list_tasks()])
def test_every_registered_task_keeps_the_contract(task: str) -> None:
    assert check_task(task, seed=7, steps=40) == []
