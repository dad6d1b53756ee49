"""The test-split leakage guard: a plan or a dataset touching a (task, seed) the loop tests on is refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from lab.errors import DomainError
from lab.improve.models import ImprovementLoop
from lab.improve.services import loop_create, loop_run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("changes", "field", "named"),
    [
        ({"test_seeds": [3, 20]}, "episodes", "the picked episodes contains toolgym/chain seed 3"),
        ({"test_seeds": [0, 20]}, "test_seeds", "the successful episodes (dataset source) contains toolgym/chain seed 0"),
        (
            {"dev_seeds": [20, 30], "test_seeds": [20, 21]},
            "dev_seeds",
            "the dev split (checkpoint selection) contains toolgym/chain seed 20",
        ),
        (
            {"test_task_set": "toolgym/train", "anchor_seeds": [21], "test_seeds": [21]},
            "anchor_seeds",
            "the anchor demonstrations contains toolgym/chain seed 21",
        ),
        (
            {
                "recipe": "grpo",
                "recipe_config": {"task": "toolgym/chain", "train_seed_start": 0, "train_seeds": 100},
                "test_seeds": [20, 21],
            },
            "recipe_config.train_seed_start",
            "the grpo training seeds (0..99) contains toolgym/chain seed 20 (and 1 more)",
        ),
    ],
)
def test_a_plan_that_touches_the_test_split_is_refused_naming_the_task_and_seed(
    project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any], changes: dict[str, Any], field: str, named: str
) -> None:
    with pytest.raises(DomainError) as refused:
        loop_create(project=project_a, evaluation=clumsy_evaluation, config={**loop_config, **changes}, enqueue=False)
    assert refused.value.code == "test_leakage" and refused.value.details["path"] == field
    assert refused.value.message.startswith(named) and "which the loop tests on" in refused.value.message
    assert not ImprovementLoop.objects.exists()


def test_a_dataset_line_from_a_test_seed_fails_the_dataset_stage_with_the_task_and_seed(
    project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    """The guard over the written data: here the test seeds were changed after creation, behind the plan check."""
    loop = loop_create(
        project=project_a,
        evaluation=clumsy_evaluation,
        enqueue=False,
        config={**loop_config, "sources": {"successes": 1.0, "recovery": 0, "anchors": 0}},
    )
    ImprovementLoop.objects.filter(pk=loop.pk).update(stage="dataset", config={**loop.config, "test_seeds": [2]})
    loop = loop_run(loop_id=loop.pk)
    assert (loop.status, loop.stage) == ("failed", "dataset") and loop.dataset is None and loop.run is None
    assert loop.error.startswith("the dataset's successes source contains toolgym/chain seed 2, which the loop tests on")
    assert loop.stages["dataset"]["status"] == "failed"
