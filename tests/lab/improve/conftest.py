"""Fixtures of improvement loops: a clumsy toolgym agent that fails on odd seeds, its finished evaluation, the tiny model.

The clumsy agent answers a guessed colour at once on odd seeds (a failure whose correction, looking the item up
first, the anchor's rule diagnosis finds and replay verifies: continued by the clumsy agent, which answers right
once it has the colour) and looks up first on even seeds (a success).
"""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.policies import register_policy
from environments.toolgym.anchors import ExpertPolicy, _results
from environments.toolgym.world import COLORS

TINY_SFT = {"max_steps": 2, "save_every": 1, "batch_size": 2, "learning_rate": 1e-3, "device": "cpu"}
FAST_HARNESS = {"max_turns": 3, "max_new_tokens": 12}


class ClumsyPolicy(Policy):
    name = "clumsy"
    kind = "scripted"

    def __init__(self, seed: int) -> None:
        self.guess = seed % 2 == 1

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        if self.guess and not _results(history):
            return Action(tool_calls=[ToolCall("answer", {"color": COLORS[-1]}, f"c{len(history)}")])
        return ExpertPolicy().act(history, tools)


def _clumsy(env: Env, seed: int) -> Policy:
    return ClumsyPolicy(seed)


register_policy("toolgym", "clumsy", _clumsy)


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
    return {"base_model": tiny_model, "recipe_config": TINY_SFT, "dev_seeds": [10, 11], "test_seeds": [20, 21], "anchor_seeds": [1000],
            "sources": {"recovery": 2.0, "successes": 1.0, "anchors": 0.5}}  # fmt: skip


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
