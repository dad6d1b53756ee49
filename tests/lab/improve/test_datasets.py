"""The loop's frozen dataset: weights as repetition, the hash the training run checks, an empty dataset refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.errors import DomainError
from lab.improve.datasets import copies, loop_dataset_build
from lab.improve.services import loop_create

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("weight", "expected"), [(0.0, [0, 0, 0, 0]), (0.5, [0, 1, 0, 1]), (1.0, [1, 1, 1, 1]), (1.5, [1, 2, 1, 2]), (2.0, [2, 2, 2, 2])]
)
def test_a_weight_repeats_examples_evenly(weight: float, expected: list[int]) -> None:
    assert [copies(i, weight) for i in range(4)] == expected


def test_a_dataset_with_every_weight_at_zero_is_refused(project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    loop = loop_create(
        project=project_a,
        evaluation=clumsy_evaluation,
        enqueue=False,
        config={**loop_config, "sources": {"recovery": 0, "successes": 0, "anchors": 0}},
    )
    with pytest.raises(DomainError, match=r"the dataset would be empty \(recovery: 0 examples at weight 0, successes: 2 examples"):
        loop_dataset_build(loop=loop, anchor_evaluation=None)


def test_the_training_run_refuses_a_dataset_file_changed_after_it_was_frozen(
    project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    from lab.runs.services import FrozenFile, run_create, run_execute

    loop = loop_create(
        project=project_a,
        evaluation=clumsy_evaluation,
        enqueue=False,
        config={**loop_config, "sources": {"successes": 1.0, "recovery": 0, "anchors": 0}},
    )
    dataset = loop_dataset_build(loop=loop, anchor_evaluation=None)
    assert dataset.lines == 2 and dataset.counts["successes"] == {"examples": 2, "lines": 2, "partial": 0}
    run = run_create(
        project=project_a,
        recipe="sft",
        base_model=loop.config["base_model"],
        config=loop.config["recipe_config"],
        enqueue=False,
        dataset_file=FrozenFile(dataset.path, dataset.content_hash, tuple(dataset.episode_ids)),
    )
    with open(dataset.path, "ab") as handle:
        handle.write(b'{"header": {}, "steps": []}\n')
    run = run_execute(run_id=run.pk)
    assert run.status == "failed" and f"the dataset file {dataset.path} changed since launch" in run.error
    assert Path(dataset.path).name == f"v{dataset.version}-{dataset.content_hash[:16]}.jsonl"


@pytest.mark.parametrize(("include_partial", "examples"), [(False, 1), (True, 2)])
def test_a_partial_demonstration_is_left_out_unless_the_loop_includes_it(
    project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any], include_partial: bool, examples: int
) -> None:
    from lab.rollouts.selectors import evaluation_episodes

    cut = next(e for e in evaluation_episodes(clumsy_evaluation) if e.passed)
    meta = {**cut.meta, "header": {**cut.meta["header"], "termination_reason": "max_steps"}}  # a success cut at the step cap
    type(cut).objects.filter(pk=cut.pk).update(termination_reason="max_steps", meta=meta)
    loop = loop_create(
        project=project_a,
        evaluation=clumsy_evaluation,
        enqueue=False,
        config={**loop_config, "sources": {"successes": 1.0, "recovery": 0, "anchors": 0}, "include_partial": include_partial},
    )
    dataset = loop_dataset_build(loop=loop, anchor_evaluation=None)
    assert dataset.counts["successes"] == {"examples": examples, "lines": examples, "partial": 1}
    assert (cut.pk in dataset.episode_ids) is include_partial


def test_include_partial_must_be_a_boolean(project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    with pytest.raises(DomainError, match="include_partial: give true or false, got 'yes'"):
        loop_create(project=project_a, evaluation=clumsy_evaluation, enqueue=False, config={**loop_config, "include_partial": "yes"})
