"""Fixtures for training runs: the tiny model, expert toolgym episodes stored in alice's project, a run with a checkpoint."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_model(model_store: Any) -> str:
    """The tiny model, inside the model store (the only place besides a project's checkpoints a run may read)."""
    from training.tiny import build_tiny_model

    return str(build_tiny_model(model_store / "tiny", seed=0))


@pytest.fixture
def lookup_episodes(project_a: Any) -> list[int]:
    """Six expert toolgym/lookup episodes in project A (what an SFT run trains on)."""
    from environments.toolgym.anchors import ExpertPolicy
    from lab.trajectories.services import episodes_ingest
    from training.scripted import scripted_episodes

    records = scripted_episodes(ExpertPolicy(), "toolgym/lookup", range(6))
    return [outcome.episode.pk for outcome in episodes_ingest(project=project_a, records=records)]


@pytest.fixture
def run_with_checkpoint(project_a: Any, alice: Any, tiny_model: str) -> Any:
    """A finished run whose only checkpoint (step 5) is the tiny model."""
    from lab.runs.models import Checkpoint, TrainingRun

    run = TrainingRun.objects.create(project=project_a, name="done", recipe="sft", base_model=tiny_model, status="finished")
    Checkpoint.objects.create(run=run, step=5, path=tiny_model)
    return run


@pytest.fixture
def wait_for() -> Callable[..., Any]:
    """wait_for(predicate, timeout=...) polls until predicate() is truthy and returns its value."""

    def wait(predicate: Callable[[], Any], timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"condition not met within {timeout} s")

    return wait
