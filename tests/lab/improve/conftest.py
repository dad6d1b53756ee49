"""Fixtures of improvement loops: the clumsy toolgym agent (tests/lab/improve/clumsy.py, fails on odd seeds), its
finished evaluation, the tiny model, a loop ready to promote."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from environments import policies
from tests.lab.improve.clumsy import _clumsy

TINY_SFT = {"max_steps": 2, "save_every": 1, "batch_size": 2, "learning_rate": 1e-3, "device": "cpu"}
FAST_HARNESS = {"max_turns": 3, "max_new_tokens": 12}


@pytest.fixture(autouse=True)
def clumsy_policy() -> Iterator[None]:
    """The clumsy agent, registered for this package's tests only: registered at import, it leaked into every other
    test's list of toolgym policies. Its own MonkeyPatch, so a test's `monkeypatch.undo()` keeps it."""
    policies.list_tasks()  # loads the env packages first, so their own registrations are not undone with ours
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(policies._POLICIES, ("toolgym", "clumsy"), _clumsy)
        yield


@pytest.fixture(scope="session")
def tiny_model(model_store: Any) -> str:
    from training.tiny import build_tiny_model

    return str(build_tiny_model(model_store / "tiny", seed=0))


@pytest.fixture
def clumsy_evaluation(project_a: Any) -> Any:
    """The clumsy agent's finished evaluation on toolgym/chain, seeds 0-3 (seeds 1 and 3 fail)."""
    from lab.rollouts.evaluations import evaluation_launch
    from lab.rollouts.models import RolloutJob
    from lab.rollouts.services import rollout_run
    from lab.trajectories.models import AgentConfig

    agent = AgentConfig.objects.create(project=project_a, name="clumsy", kind="scripted", model="clumsy", harness=FAST_HARNESS)
    evaluation = evaluation_launch(project=project_a, agent=agent, task_set="toolgym/chain", seeds=[0, 1, 2, 3], enqueue=False)
    for job in RolloutJob.objects.filter(evaluation=evaluation):
        rollout_run(job_id=job.pk)
    evaluation.refresh_from_db()
    assert evaluation.status == "finished"
    return evaluation


@pytest.fixture
def loop_config(tiny_model: str) -> dict[str, Any]:
    return {
        "base_model": tiny_model,
        "recipe_config": TINY_SFT,
        "dev_seeds": [10, 11],
        "test_seeds": [20, 21],
        "anchor_seeds": [1000],
        "sources": {"recovery": 2.0, "successes": 1.0, "anchors": 0.5},
    }


@pytest.fixture
def promotable_loop(project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any], tiny_model: str) -> Any:
    """A loop whose report is done: its run's only checkpoint (step 1, the tiny model) was chosen."""
    from lab.improve.services import loop_create
    from lab.runs.models import Checkpoint, TrainingRun

    loop = loop_create(project=project_a, evaluation=clumsy_evaluation, config=loop_config, enqueue=False)
    run = TrainingRun.objects.create(project=project_a, name="loop run", recipe="sft", base_model=tiny_model, status="finished")
    loop.run, loop.checkpoint = run, Checkpoint.objects.create(run=run, step=1, path=tiny_model)
    loop.stage, loop.status = "promote", "finished"
    loop.save()
    return loop
